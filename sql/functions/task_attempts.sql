-- SPDX-License-Identifier: BSD-3-Clause

-- Every attempt of task p_id that started, oldest first: its
-- earlier_attempts, then the attempt its own columns describe when that one
-- started and is not among them (running: no end yet; or the attempt the
-- task finished with, its final state as outcome). A pending task's
-- earlier attempts are all in the list. No row for an unknown task.
CREATE OR REPLACE FUNCTION cafmq.task_attempts(p_id uuid)
 RETURNS TABLE(attempt integer, started_at timestamptz,
               ended_at timestamptz, outcome text, error text, node text,
               worker text, retry_at timestamptz)
 LANGUAGE sql
 STABLE
AS $$
  SELECT a.attempt, a.started_at, a.ended_at, a.outcome, a.error, a.node,
         a.worker, a.retry_at
    FROM cafmq.tasks t,
         jsonb_to_recordset(coalesce(t.earlier_attempts, '[]'))
           AS a (attempt integer, started_at timestamptz,
                 ended_at timestamptz, outcome text, error text, node text,
                 worker text, retry_at timestamptz)
   WHERE t.id = p_id
  UNION ALL
  SELECT t.attempt, t.started_at, t.finished_at, t.state::text,
         CASE WHEN t.state IN ('failed', 'cancelled') THEN t.last_error END,
         t.node, t.worker, NULL
    FROM cafmq.tasks t
   WHERE t.id = p_id AND t.state IN ('running', 'completed', 'failed',
                                     'cancelled')
     AND t.started_at IS NOT NULL
     AND NOT cafmq.attempt_logged(t.earlier_attempts, t.attempt)
   ORDER BY 1
$$;
