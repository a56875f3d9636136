-- SPDX-License-Identifier: BSD-3-Clause
SELECT * FROM cafmq.commit($1::uuid[])
