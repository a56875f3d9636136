-- SPDX-License-Identifier: BSD-3-Clause

-- One entry of a task's earlier_attempts (migration 0017): attempt
-- p_attempt ran from p_started to p_ended on p_node (on its worker
-- p_worker, where a worker node or process ran it) and ended with
-- p_outcome ('failed': it failed and is retried at p_retry_at; 'lost': its
-- lease expired; or the final state of a task retried by hand), with
-- p_error. Keys whose value is NULL are left out. Task detail reads the
-- entries back with cafmq.task_attempts.
CREATE OR REPLACE FUNCTION cafmq.attempt_entry(
    p_attempt integer,
    p_started timestamptz,
    p_ended timestamptz,
    p_outcome text,
    p_error text,
    p_node text,
    p_retry_at timestamptz,
    p_worker text DEFAULT NULL)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $$
  SELECT jsonb_strip_nulls(jsonb_build_object(
           'attempt', p_attempt, 'started_at', p_started,
           'ended_at', p_ended, 'outcome', p_outcome, 'error', p_error,
           'node', p_node, 'worker', p_worker, 'retry_at', p_retry_at))
$$;
