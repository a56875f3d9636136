-- SPDX-License-Identifier: BSD-3-Clause
-- Retries the failed or cancelled tasks matching a filter ($1..$5 as in
-- list_tasks.sql), at most $6, in id order.
SELECT id::text, outcome FROM cafmq.retry(ARRAY(
  SELECT t.id FROM cafmq.tasks t
   WHERE t.state IN ('failed', 'cancelled')
     AND cafmq.task_matches(t, $1::text[], $2::text, $3::text, $4::bigint,
                            $5::bigint)
   ORDER BY t.id LIMIT $6::integer))
