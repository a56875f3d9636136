-- SPDX-License-Identifier: BSD-3-Clause
-- The columns of a claim's rows (c: cafmq.claim_row) as the runtime reads
-- them, the start of queries/claim.sql and queries/claim_ids.sql (which
-- add their FROM): intervals and the deadline in µs; pickup_us, for the
-- metrics: how long a task was ready when claimed, for one task in $5 (by
-- a hash of its id; 0: none). The subquery reads the row as this
-- statement's snapshot saw it, before the claim moved run_at to the
-- lease's end: an index lookup each, so not for every task.
SELECT c.id, c.name, c.channel_name, c.channel_args, c.attempt,
       c.max_attempts, c.ordered,
       extract(epoch FROM c.timeout) * 1e6 AS timeout_us,
       extract(epoch FROM c.deadline - now()) * 1e6 AS deadline_in_us,
       c.payload_json, c.payload_bytes, c.cursor_name, c.cursor_args,
       extract(epoch FROM c.wait) * 1e6 AS wait_us, c.ended, c.error,
       c.parents, c.workflow_id,
       CASE WHEN $5::integer > 0 AND c.id IS NOT NULL AND c.ended IS NULL
                 AND (hashtext(c.id::text) & 2147483647) % $5 = 0 THEN
         extract(epoch FROM now() - (SELECT t.run_at FROM cafmq.tasks_live t
                                      WHERE t.id = c.id)) * 1e6
       END AS pickup_us
