-- SPDX-License-Identifier: BSD-3-Clause
-- Cancels the live tasks matching a filter ($1..$5 as in list_tasks.sql),
-- at most $6, one cafmq.cancel each in id order; counts the outcomes.
SELECT c.outcome, count(*) AS tasks
  FROM (SELECT cafmq.cancel(x.id) AS outcome
          FROM (SELECT t.id FROM cafmq.tasks t
                 WHERE t.state IN ('uncommitted', 'waiting', 'pending', 'running')
                   AND cafmq.task_matches(t, $1::cafmq.task_state[], $2::text, $3::text,
                                          $4::bigint, $5::bigint)
                 ORDER BY t.id LIMIT $6::integer) x) c
 GROUP BY c.outcome
