-- SPDX-License-Identifier: BSD-3-Clause

-- The children of tasks that just ended (p_parents: moved to the history,
-- or gone without one, like an expired reservation) follow them, in the
-- transaction that ended them. Each parent's end is kept in
-- cafmq.parent_results for its children to read. Then, for the waiting
-- (or uncommitted) children of these parents (of p_only, where given):
--   1. each slot of a child (cafmq.child_waits, migration 0020) counts down
--      its parents among p_parents; slots are locked in (child, slot)
--      order, so transactions ending parents of one child wait for each
--      other only within a slot;
--   2. the children are locked in id order; a child with a failed or
--      cancelled parent among p_parents whose on_parent_failure is
--      'cancel' ends cancelled, "parent <id> failed: <error>", and its own
--      children follow it;
--   3. every other child counts down the slots that reached zero here; the
--      one that brings it to zero makes it pending (due now or at its own
--      run_at) and notifies its channel. Exactly one transaction does: the
--      child's row takes them in turn, each counting down from what the
--      one before left.
CREATE OR REPLACE FUNCTION cafmq.release_children(
    p_parents uuid[], p_only uuid[] DEFAULT NULL)
 RETURNS void
 LANGUAGE plpgsql
AS $$
DECLARE
  v_children uuid[];
  v_zeroed integer[];
  v_failures text[];
  v_cancelled uuid[];
  v_parents uuid[];
  v_ready uuid[];
  v_done uuid[];
  v_wake text[];
BEGIN
  INSERT INTO cafmq.parent_results AS r
    (id, name, state, result, last_error, finished_at)
  SELECT p.id, coalesce(h.name, ''), coalesce(h.state, 'cancelled'),
         h.result,
         coalesce(h.last_error, CASE WHEN h.id IS NULL
                                     THEN 'removed (cleared, or an expired reservation)' END),
         coalesce(h.finished_at, now())
    FROM unnest(p_parents) AS p (id)
    LEFT JOIN cafmq.tasks_history h ON h.id = p.id
  ON CONFLICT (id) DO UPDATE
     SET state = excluded.state, result = excluded.result,
         last_error = excluded.last_error, finished_at = excluded.finished_at;
  -- 1. The slots.
  PERFORM 1 FROM cafmq.child_waits w
   WHERE (w.child, w.slot) IN (
     SELECT e.child, e.slot FROM cafmq.task_parents e
      WHERE e.parent = ANY (p_parents)
        AND (p_only IS NULL OR e.child = ANY (p_only)))
   ORDER BY w.child, w.slot FOR UPDATE;
  WITH down AS (
    UPDATE cafmq.child_waits w SET parents_left = w.parents_left - g.ended
      FROM (SELECT e.child, e.slot, count(*)::integer AS ended
              FROM cafmq.task_parents e
             WHERE e.parent = ANY (p_parents)
               AND (p_only IS NULL OR e.child = ANY (p_only))
             GROUP BY 1, 2) g
     WHERE w.child = g.child AND w.slot = g.slot
    RETURNING w.child, w.parents_left = 0 AS zeroed),
  failed AS (
    SELECT e.child,
           (array_agg(CASE r.state
                        WHEN 'cancelled'
                          THEN 'parent ' || r.id || ' was cancelled'
                               || coalesce(': ' || r.last_error, '')
                        ELSE 'parent ' || r.id || ' failed: '
                             || coalesce(r.last_error, 'no error') END
                      ORDER BY r.finished_at, r.id))[1] AS failure
      FROM cafmq.task_parents e
      JOIN cafmq.parent_results r ON r.id = e.parent
     WHERE e.parent = ANY (p_parents) AND r.state <> 'completed'
       AND (p_only IS NULL OR e.child = ANY (p_only))
     GROUP BY e.child)
  SELECT array_agg(c.child ORDER BY c.child), array_agg(c.zeroed ORDER BY c.child),
         array_agg(f.failure ORDER BY c.child)
    INTO v_children, v_zeroed, v_failures
    FROM (SELECT d.child, count(*) FILTER (WHERE d.zeroed)::integer AS zeroed
            FROM down d GROUP BY d.child) c
    LEFT JOIN failed f ON f.child = c.child
   WHERE c.zeroed > 0 OR f.failure IS NOT NULL;
  IF v_children IS NULL THEN
    RETURN;
  END IF;
  -- 2. The children, in id order; those a failure cancels.
  PERFORM 1 FROM cafmq.tasks_live t
   WHERE t.id = ANY (v_children) AND t.state IN ('waiting', 'uncommitted')
   ORDER BY t.id FOR UPDATE;
  WITH ended AS (
    DELETE FROM cafmq.tasks_live t
     USING unnest(v_children, v_failures) AS f (child, failure)
     WHERE t.id = f.child AND t.state IN ('waiting', 'uncommitted')
       AND f.failure IS NOT NULL AND t.on_parent_failure = 'cancel'
    RETURNING t, f.failure),
  moved AS (
    INSERT INTO cafmq.tasks_history AS x
    SELECT h.* FROM ended e,
           cafmq.finished_row(e.t, 'cancelled', e.failure, NULL,
                              (e.t).lost_attempts) h
    RETURNING x.id, x.channel_name, x.finished_at, x.has_children),
  counted AS (
    INSERT INTO cafmq.finished_counts
    SELECT (m.finished_at AT TIME ZONE 'UTC')::date, m.channel_name,
           'cancelled', count(*)
      FROM moved m GROUP BY 1, 2)
  SELECT array_agg(m.id), array_agg(m.id) FILTER (WHERE m.has_children)
    INTO v_cancelled, v_parents FROM moved m;
  -- 3. The others count down; the last slot readies a waiting child.
  WITH counted AS (
    UPDATE cafmq.tasks_live t
       SET parents_left = t.parents_left - f.zeroed,
           state = CASE WHEN t.state = 'waiting'
                             AND t.parents_left - f.zeroed = 0
                        THEN 'pending' ELSE t.state END::cafmq.task_state,
           run_at = CASE WHEN t.state = 'waiting'
                              AND t.parents_left - f.zeroed = 0
                         THEN greatest(t.run_at, now()) ELSE t.run_at END
      FROM unnest(v_children, v_zeroed) AS f (child, zeroed)
     WHERE t.id = f.child AND t.state IN ('waiting', 'uncommitted')
       AND f.zeroed > 0
    RETURNING t.id, t.state, t.channel_name, t.parents_left)
  SELECT array_agg(c.id) FILTER (WHERE c.state = 'pending'),
         array_agg(DISTINCT c.channel_name) FILTER (WHERE c.state = 'pending'),
         array_agg(c.id) FILTER (WHERE c.parents_left = 0)
    INTO v_ready, v_wake, v_done FROM counted c;
  DELETE FROM cafmq.child_waits w
   WHERE w.child = ANY (v_done || v_cancelled);
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_ready || v_cancelled);
  IF v_parents IS NOT NULL THEN
    PERFORM cafmq.release_children(v_parents);
  END IF;
END
$$;
