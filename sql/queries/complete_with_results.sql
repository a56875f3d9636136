-- SPDX-License-Identifier: BSD-3-Clause
-- complete.sql for a batch where some handlers stored a result ($3, NULL
-- where none).
SELECT * FROM cafmq.complete($1::uuid[], $2::integer[], $3::jsonb[])
