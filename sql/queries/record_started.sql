-- SPDX-License-Identifier: BSD-3-Clause
-- A runner's record: the attempts started in it (its session's `started`;
-- $2 NULL: unchanged), and those that started on joined workers ($3 ids,
-- $4 attempts, $5 workers), each on its task's row.
SELECT cafmq.record_started($1, $2::uuid[]),
       cafmq.record_workers($3::uuid[], $4::integer[], $5::text[])
