-- Cancellation and retention.

-- Cancels a task. Pending, scheduled and uncommitted tasks end 'cancelled' at
-- once and never run. A running task gets its flag set (seen by its runner at
-- the next lease renewal at the latest) and a notification on cafmq_cancel
-- with its id; it ends 'cancelled' when its handler stops, is never retried,
-- and is not re-run if its lease expires. Returns 'cancelled', 'requested',
-- the final state of an already finished task, or 'unknown'.
CREATE FUNCTION cafmq.cancel(p_id uuid) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_task record;
BEGIN
  SELECT t.state, t.ordered, t.channel_name INTO v_task
    FROM cafmq.tasks t WHERE t.id = p_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 'unknown';
  END IF;
  IF v_task.state IN ('completed', 'failed', 'cancelled') THEN
    RETURN v_task.state::text;
  END IF;
  IF v_task.state = 'running' THEN
    UPDATE cafmq.tasks SET cancel_requested = true WHERE id = p_id;
    PERFORM pg_notify('cafmq_cancel', p_id::text);
    RETURN 'requested';
  END IF;
  UPDATE cafmq.tasks
     SET state = 'cancelled', cancel_requested = true, commit_deadline = NULL,
         finished_at = now()
   WHERE id = p_id;
  IF v_task.ordered THEN
    PERFORM cafmq.notify_ready(ARRAY[v_task.channel_name]);
  END IF;
  PERFORM cafmq.publish_status(ARRAY[p_id]);
  RETURN 'cancelled';
END
$$;

-- Deletes up to p_limit tasks that finished more than p_retention ago, and
-- watches of sessions that are gone. One node at a time: returns -1 without
-- doing anything when another transaction is pruning.
CREATE FUNCTION cafmq.prune(p_retention interval, p_limit integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_count bigint;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended('cafmq.prune', 7305)) THEN
    RETURN -1;
  END IF;
  DELETE FROM cafmq.tasks t
   WHERE t.id IN (SELECT x.id FROM cafmq.tasks x
                   WHERE x.state IN ('completed', 'failed', 'cancelled')
                     AND x.finished_at < now() - p_retention
                   ORDER BY x.finished_at LIMIT p_limit);
  GET DIAGNOSTICS v_count = ROW_COUNT;
  DELETE FROM cafmq.watches w
   WHERE w.backend_pid NOT IN (SELECT a.pid FROM pg_stat_activity a
                                WHERE a.pid IS NOT NULL);
  RETURN v_count;
END
$$;
