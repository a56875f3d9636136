-- SPDX-License-Identifier: BSD-3-Clause
SELECT * FROM cafmq.release($1::uuid[], $2::integer[])
