-- SPDX-License-Identifier: BSD-3-Clause

-- Cancels a task: a waiting, pending or uncommitted one ends cancelled at
-- once (its children follow it), a
-- running one is asked to stop (its handler sees the request at its next
-- lease renewal). Returns 'cancelled', 'requested', 'unknown', 'expired'
-- for a reservation past its commit deadline (gone, even before maintenance
-- removes it), or 'already <state>' for a finished task.
CREATE OR REPLACE FUNCTION cafmq.cancel(p_id uuid)
 RETURNS text
 LANGUAGE plpgsql
AS $$
DECLARE
  v_task record;
BEGIN
  SELECT t.state, t.ordered, t.channel_name, t.commit_deadline,
         t.has_children INTO v_task
    FROM cafmq.tasks_live t WHERE t.id = p_id FOR UPDATE;
  IF NOT FOUND THEN
    -- Finished (perhaps while this waited for its lock), or unknown.
    SELECT t.state INTO v_task FROM cafmq.tasks_history t WHERE t.id = p_id;
    IF NOT FOUND THEN
      RETURN 'unknown';
    END IF;
    RETURN 'already ' || v_task.state::text;
  END IF;
  IF v_task.state = 'uncommitted' AND v_task.commit_deadline <= now() THEN
    RETURN 'expired';
  END IF;
  IF v_task.state = 'running' THEN
    UPDATE cafmq.tasks_live SET cancel_requested = true WHERE id = p_id;
    PERFORM pg_notify('cafmq_cancel', p_id::text);
    RETURN 'requested';
  END IF;
  WITH ended AS (
    DELETE FROM cafmq.tasks_live t WHERE t.id = p_id RETURNING t),
  moved AS (
    INSERT INTO cafmq.tasks_history
    SELECT h.* FROM ended e, cafmq.finished_row(e.t, 'cancelled', NULL, NULL,
                                                (e.t).lost_attempts) h
    RETURNING finished_at, channel_name)
  INSERT INTO cafmq.finished_counts
  SELECT (m.finished_at AT TIME ZONE 'UTC')::date, m.channel_name, 'cancelled',
         1
    FROM moved m;
  IF v_task.ordered THEN
    PERFORM cafmq.notify_ready(ARRAY[v_task.channel_name]);
  END IF;
  IF v_task.has_children THEN
    PERFORM cafmq.release_children(ARRAY[p_id]);
  END IF;
  PERFORM cafmq.publish_status(ARRAY[p_id]);
  RETURN 'cancelled';
END
$$;
