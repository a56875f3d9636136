-- SPDX-License-Identifier: BSD-3-Clause

-- Records failed attempts. Fenced like complete. A retryable failure with
-- attempts left, not cancelled, whose retry would start before its deadline
-- is pending again after its retry delay (jittered as the task asks; one
-- draw per failure serves both the retry time and the deadline check);
-- any other ends failed, or cancelled if a cancel was asked, and moves to
-- the history, and its children follow it. A retried attempt is appended to the task's
-- earlier_attempts. p_workers names the worker node or process that ran
-- each attempt (NULL: its runner), kept with it. Returns each task's new
-- state and run_at.
CREATE OR REPLACE FUNCTION cafmq.fail(
    p_ids uuid[],
    p_attempts integer[],
    p_errors text[],
    p_retryable boolean[],
    p_workers text[] DEFAULT NULL)
 RETURNS TABLE(id uuid, state cafmq.task_state, run_at timestamp with time zone)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $$
DECLARE
  v_ids uuid[];
  v_states cafmq.task_state[];
  v_times timestamptz[];
  v_wake text[];
  v_parents uuid[];
BEGIN
  RETURN QUERY
  UPDATE cafmq.tasks_live t
     SET (state, run_at, last_error, lost_attempts, earlier_attempts,
          worker) = (
         SELECT 'pending'::cafmq.task_state, r.at, f.error, 0,
                coalesce(t.earlier_attempts, '[]')
                || cafmq.attempt_entry(t.attempt, t.started_at, now(),
                                       'failed', f.error, t.node, r.at,
                                       f.worker),
                NULL::text
           FROM (SELECT now() + cafmq.retry_delay(
                   t.backoff, t.backoff_cap, t.attempt, t.backoff_jitter,
                   f.draw)) AS r (at))
    FROM (SELECT u.*, random() AS draw
            FROM unnest(p_ids, p_attempts, p_errors, p_retryable, p_workers)
                 AS u (id, attempt, error, retryable, worker)) AS f
   WHERE t.id = f.id AND t.attempt = f.attempt
       AND t.state::text = 'running'
     AND f.retryable AND t.attempt < t.max_attempts AND NOT t.cancel_requested
     AND (t.deadline IS NULL OR now() + cafmq.retry_delay(
            t.backoff, t.backoff_cap, t.attempt, t.backoff_jitter, f.draw)
          < t.deadline)
  RETURNING t.id, t.state, t.run_at;
  WITH ended AS (
    DELETE FROM cafmq.tasks_live t
     USING unnest(p_ids, p_attempts, p_errors, p_workers)
           AS f (id, attempt, error, worker)
     WHERE t.id = f.id AND t.attempt = f.attempt
       AND t.state::text = 'running'
    RETURNING t, f.error, f.worker),
  fin AS (
    INSERT INTO cafmq.tasks_history AS x
    SELECT h.* FROM ended e,
           cafmq.finished_row(e.t, CASE WHEN (e.t).cancel_requested
                                        THEN 'cancelled'
                                        ELSE 'failed' END::cafmq.task_state,
                              e.error, NULL, 0, e.worker) h
    RETURNING x.id, x.state, x.run_at, x.channel_name, x.ordered,
              x.finished_at, x.has_children),
  counted AS (
    INSERT INTO cafmq.finished_counts
    SELECT (f.finished_at AT TIME ZONE 'UTC')::date, f.channel_name, f.state,
           count(*)
      FROM fin f GROUP BY 1, 2, 3)
  SELECT array_agg(fin.id), array_agg(fin.state), array_agg(fin.run_at),
         array_agg(fin.channel_name) FILTER (WHERE fin.ordered),
         array_agg(fin.id) FILTER (WHERE fin.has_children)
    INTO v_ids, v_states, v_times, v_wake, v_parents FROM fin;
  PERFORM cafmq.notify_ready(v_wake);
  IF v_parents IS NOT NULL THEN
    PERFORM cafmq.release_children(v_parents);
  END IF;
  PERFORM cafmq.publish_status(p_ids);
  RETURN QUERY SELECT * FROM unnest(v_ids, v_states, v_times);
END
$$;
