-- SPDX-License-Identifier: BSD-3-Clause

-- Retry by hand: a failed or cancelled task is pending again, runnable now,
-- with a fresh attempt budget and a fresh lost-lease count. Its attempt
-- number goes on counting, so an old attempt stays fenced out; its last
-- error stays. Returns one row per id asked for: 'retried', 'unknown',
-- the state a live or completed task is in, 'deadline passed', or
-- 'unique key held' (a live task holds its unique key now). A retried task
-- moves from the history back to the live table (a child whose parents are
-- not all ended waits for them: cafmq.wait_again), and the children it had
-- cancelled wait for it again (cafmq.revive_children).
CREATE OR REPLACE FUNCTION cafmq.retry(p_ids uuid[])
 RETURNS TABLE(id uuid, outcome text)
 LANGUAGE plpgsql
AS $$
DECLARE
  v record;
  v_task cafmq.tasks_live;
  v_channels text[] := '{}';
  v_retried uuid[] := '{}';
BEGIN
  FOR v IN SELECT t.id, t.state, t.deadline, t.channel_name
             FROM cafmq.tasks_history t WHERE t.id = ANY (p_ids)
            ORDER BY t.id FOR UPDATE LOOP
    id := v.id;
    IF v.state NOT IN ('failed', 'cancelled') THEN
      outcome := v.state::text;
    ELSIF v.deadline IS NOT NULL AND v.deadline <= now() THEN
      outcome := 'deadline passed';
    ELSE
      BEGIN
        DELETE FROM cafmq.tasks_history t WHERE t.id = v.id
        RETURNING t.* INTO v_task;
        -- Its last attempt joins the earlier ones, unless a retried
        -- failure put it there already (a task cancelled while it waited).
        IF v_task.started_at IS NOT NULL
           AND NOT cafmq.attempt_logged(v_task.earlier_attempts,
                                        v_task.attempt) THEN
          v_task.earlier_attempts := coalesce(v_task.earlier_attempts, '[]')
            || cafmq.attempt_entry(v_task.attempt, v_task.started_at,
                                   v_task.finished_at, v.state::text,
                                   v_task.last_error, v_task.node, now(),
                                   v_task.worker);
        END IF;
        v_task.worker := NULL; -- the worker of a running attempt only
        v_task.state := 'pending';
        IF v_task.parents_left IS NOT NULL THEN
          -- A child waits for its parents that are live.
          v_task.parents_left := cafmq.wait_again(v.id);
          IF v_task.parents_left > 0 THEN
            v_task.state := 'waiting';
          END IF;
        END IF;
        v_task.run_at := now();
        v_task.finished_at := NULL;
        v_task.cancel_requested := false;
        v_task.lost_attempts := 0;
        v_task.node := NULL;
        v_task.max_attempts := v_task.attempt + v_task.max_attempts
                               - v_task.attempt_base;
        v_task.attempt_base := v_task.attempt;
        INSERT INTO cafmq.tasks_live VALUES (v_task.*);
        outcome := 'retried';
        v_channels := v_channels || v.channel_name;
        v_retried := v_retried || v.id;
      EXCEPTION WHEN unique_violation THEN
        outcome := 'unique key held';
      END;
    END IF;
    RETURN NEXT;
  END LOOP;
  -- Live (perhaps retried by another call meanwhile), or unknown.
  RETURN QUERY
  SELECT u, coalesce((SELECT t.state::text FROM cafmq.tasks_live t
                       WHERE t.id = u), 'unknown')
    FROM unnest(p_ids) u
   WHERE NOT EXISTS (SELECT 1 FROM cafmq.tasks_history t WHERE t.id = u)
     AND u <> ALL (v_retried);
  IF cardinality(v_retried) > 0 THEN
    PERFORM cafmq.notify_ready(ARRAY(SELECT DISTINCT unnest(v_channels)));
    PERFORM cafmq.publish_status(v_retried);
    PERFORM cafmq.revive_children(ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.id = ANY (v_retried) AND t.has_children));
  END IF;
END $$;
