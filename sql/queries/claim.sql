-- SPDX-License-Identifier: BSD-3-Clause
-- The fair claim (cafmq.claim), or with $11 the claim by id of those tasks
-- (cafmq.claim_ids, which leaves the cursor $8, $9 and the limit $5 alone).
-- pickup_us, for the metrics: how long a task was ready when claimed, for
-- one task in $10 (by a hash of its id; 0: none). The subquery reads the
-- row as this statement's snapshot saw it, before cafmq.claim moved run_at
-- to the lease's end: an index lookup each, so not for every task.
SELECT c.id, c.name, c.channel_name, c.channel_args, c.attempt,
       c.max_attempts, c.ordered,
       extract(epoch FROM c.timeout) * 1e6 AS timeout_us,
       extract(epoch FROM c.deadline - now()) * 1e6 AS deadline_in_us,
       c.payload_json, c.payload_bytes, c.cursor_name, c.cursor_args,
       extract(epoch FROM c.wait) * 1e6 AS wait_us, c.ended, c.error,
       c.parents, c.workflow_id,
       CASE WHEN $10::integer > 0 AND c.id IS NOT NULL AND c.ended IS NULL
                 AND (hashtext(c.id::text) & 2147483647) % $10 = 0 THEN
         extract(epoch FROM now() - (SELECT t.run_at FROM cafmq.tasks_live t
                                      WHERE t.id = c.id)) * 1e6
       END AS pickup_us
  FROM (SELECT * FROM cafmq.claim($1, $2::text[], $3::text[], $4::text[], $5,
                                  make_interval(secs => $6::bigint / 1e6),
                                  $7, $8, $9)
         WHERE $11::uuid[] IS NULL
        UNION ALL
        SELECT * FROM cafmq.claim_ids($1, $2::text[], $3::text[], $4::text[],
                                      $11::uuid[],
                                      make_interval(secs => $6::bigint / 1e6),
                                      $7)
         WHERE $11::uuid[] IS NOT NULL) c
