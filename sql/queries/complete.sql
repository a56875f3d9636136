-- SPDX-License-Identifier: BSD-3-Clause
SELECT * FROM cafmq.complete($1::uuid[], $2::integer[])
