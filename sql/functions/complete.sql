-- SPDX-License-Identifier: BSD-3-Clause

-- Completes the given attempts, moving their tasks to the history. Fenced:
-- an attempt that is no longer current (re-claimed, finished, cleared)
-- changes nothing. p_results holds each one's result (what its handler
-- passed to complete(); NULL where none) and p_workers the worker node or
-- worker process that ran it (NULL: its runner did), stored in the same
-- statement; either may be NULL as a whole. Their children follow them
-- (cafmq.release_children). Returns the ids completed.
--
-- The fenced lookup compares state::text: the plan is generic, made at a
-- connection's first call, and where few tasks ran then, the partial index
-- tasks_running looked cheapest to drive the join, so every id was
-- compared with every running task (9,000 running: 17 s a call, seen in
-- the fan-in benchmark). Without the index's predicate the ids drive the
-- join through the primary key, whatever the statistics said. Every fenced
-- statement over many attempts does the same (fail, keep_alive, release,
-- hand_back_attempts).
CREATE OR REPLACE FUNCTION cafmq.complete(
    p_ids uuid[],
    p_attempts integer[],
    p_results jsonb[] DEFAULT NULL,
    p_workers text[] DEFAULT NULL)
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
  v_parents uuid[];
BEGIN
  WITH ended AS (
    DELETE FROM cafmq.tasks_live t
     USING unnest(p_ids, p_attempts, p_results, p_workers)
           AS f (id, attempt, result, worker)
     WHERE t.id = f.id AND t.attempt = f.attempt
       AND t.state::text = 'running'
    RETURNING t, f.result, f.worker),
  done AS (
    INSERT INTO cafmq.tasks_history
    SELECT h.* FROM ended e,
           cafmq.finished_row(e.t, 'completed', NULL, e.result, 0,
                              e.worker) h
    RETURNING id, channel_name, ordered, finished_at, has_children),
  counted AS (
    INSERT INTO cafmq.finished_counts
    SELECT (d.finished_at AT TIME ZONE 'UTC')::date, d.channel_name,
           'completed', count(*)
      FROM done d GROUP BY 1, 2)
  SELECT array_agg(done.id),
         array_agg(done.channel_name) FILTER (WHERE done.ordered),
         array_agg(done.id) FILTER (WHERE done.has_children)
    INTO v_done, v_wake, v_parents FROM done;
  PERFORM cafmq.notify_ready(v_wake);
  IF v_parents IS NOT NULL THEN
    PERFORM cafmq.release_children(v_parents);
  END IF;
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;
