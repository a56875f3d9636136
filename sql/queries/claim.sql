-- SPDX-License-Identifier: BSD-3-Clause
-- pickup_us (only when $10, for the metrics): how long each task was ready
-- when claimed. The subquery reads the row as this statement's snapshot
-- saw it, before cafmq.claim moved run_at to the lease's end.
SELECT c.id, c.name, c.channel_name, c.channel_args, c.attempt,
       c.max_attempts, c.ordered,
       extract(epoch FROM c.timeout) * 1e6 AS timeout_us,
       extract(epoch FROM c.deadline - now()) * 1e6 AS deadline_in_us,
       c.payload_json, c.payload_bytes, c.cursor_name, c.cursor_args,
       extract(epoch FROM c.wait) * 1e6 AS wait_us,
       CASE WHEN $10::boolean AND c.id IS NOT NULL THEN
         extract(epoch FROM now() - (SELECT t.run_at FROM cafmq.tasks t
                                      WHERE t.id = c.id)) * 1e6
       END AS pickup_us
  FROM cafmq.claim($1, $2::text[], $3::text[], $4::text[], $5,
                   make_interval(secs => $6::bigint / 1e6), $7, $8, $9) c
