-- SPDX-License-Identifier: BSD-3-Clause
-- $3: each attempt's result (NULL where none), $4 its worker (NULL where
-- the runner ran it); either NULL as a whole.
SELECT * FROM cafmq.complete($1::uuid[], $2::integer[], $3::jsonb[], $4::text[])
