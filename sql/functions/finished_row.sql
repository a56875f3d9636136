-- SPDX-License-Identifier: BSD-3-Clause

-- The history row of live task `t` as it finishes now in state p_state:
-- finished_at is now, the commit deadline gone, p_last_error and p_result
-- replace the task's own where given, p_lost_attempts is its count of
-- lost attempts in a row, and p_worker the worker node or process that ran
-- its last attempt (NULL: its runner, or none). Every statement that finishes tasks moves them
-- with it, in one statement:
--   WITH ended AS (DELETE FROM cafmq.tasks_live t ... RETURNING t)
--   INSERT INTO cafmq.tasks_history
--   SELECT h.* FROM ended e, cafmq.finished_row(e.t, ...) h
-- A set-returning SQL function that is not volatile: the planner inlines it
-- into that query, so the columns are listed here once and cost no call.
CREATE OR REPLACE FUNCTION cafmq.finished_row(
    t cafmq.tasks_live,
    p_state cafmq.task_state,
    p_last_error text,
    p_result jsonb,
    p_lost_attempts integer,
    p_worker text DEFAULT NULL)
 RETURNS SETOF cafmq.tasks_history
 LANGUAGE sql
 STABLE
AS $$
  SELECT t.id, t.seq, t.name, t.channel_name, t.channel_args, p_state,
         t.ordered, t.attempt, t.max_attempts, t.run_at, t.backoff,
         t.backoff_cap, NULL::timestamptz, t.timeout, t.deadline,
         t.unique_key, t.cancel_requested OR p_state = 'cancelled', t.node,
         coalesce(p_last_error, t.last_error), t.created_at, t.started_at,
         now(), p_lost_attempts, t.backoff_jitter, t.attempt_base,
         t.priority, coalesce(p_result, t.result), t.payload_json,
         t.payload_bytes, t.earlier_attempts, p_worker, t.parents_left,
         t.on_parent_failure, t.has_children, t.workflow_id
$$;
