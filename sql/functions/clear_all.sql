-- SPDX-License-Identifier: BSD-3-Clause

-- Deletes every task, live or in the history.
CREATE OR REPLACE FUNCTION cafmq.clear_all()
 RETURNS bigint
 LANGUAGE sql
AS $$
  WITH live AS (DELETE FROM cafmq.tasks_live RETURNING 1),
  finished AS (DELETE FROM cafmq.tasks_history RETURNING 1),
  edges AS (DELETE FROM cafmq.task_parents),
  waits AS (DELETE FROM cafmq.child_waits),
  results AS (DELETE FROM cafmq.parent_results)
  SELECT (SELECT count(*) FROM live) + (SELECT count(*) FROM finished)
$$;
