-- SPDX-License-Identifier: BSD-3-Clause

-- The children of tasks that just ended (p_parents: moved to the history,
-- or gone without one, like an expired reservation) follow them, in the
-- transaction that ended them. Each parent's end is kept in
-- cafmq.parent_results for its children to read. Then, per waiting (or
-- uncommitted) child of these parents (of p_only, where given):
--   - a parent failed or cancelled, and the child's on_parent_failure is
--     'cancel': the child ends cancelled, "parent <id> failed: <error>",
--     and its own children follow it;
--   - otherwise parents_left drops by its parents among p_parents, and a
--     waiting child whose count reaches 0 is pending, due now or at its
--     own run_at, and its channel is notified.
-- Children are locked in id order first: two transactions ending parents
-- of one child take turns on its row (the second counts down from what the
-- first left), so exactly one of them readies it, and none deadlock.
CREATE OR REPLACE FUNCTION cafmq.release_children(
    p_parents uuid[], p_only uuid[] DEFAULT NULL)
 RETURNS void
 LANGUAGE plpgsql
AS $$
DECLARE
  v_children uuid[];
  v_ended integer[];
  v_failures text[];
  v_cancelled uuid[];
  v_parents uuid[];
  v_ready uuid[];
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
  SELECT array_agg(c.child), array_agg(c.ended), array_agg(c.failure)
    INTO v_children, v_ended, v_failures
    FROM (SELECT e.child, count(*)::integer AS ended,
                 (array_agg(CASE r.state
                              WHEN 'completed' THEN NULL
                              WHEN 'cancelled'
                                THEN 'parent ' || r.id || ' was cancelled'
                                     || coalesce(': ' || r.last_error, '')
                              ELSE 'parent ' || r.id || ' failed: '
                                   || coalesce(r.last_error, 'no error')
                            END ORDER BY r.state = 'completed', r.finished_at,
                                         r.id))[1] AS failure
            FROM cafmq.task_parents e
            JOIN cafmq.parent_results r ON r.id = e.parent
           WHERE e.parent = ANY (p_parents)
             AND (p_only IS NULL OR e.child = ANY (p_only))
           GROUP BY e.child) c;
  IF v_children IS NULL THEN
    RETURN;
  END IF;
  PERFORM 1 FROM cafmq.tasks_live t
   WHERE t.id = ANY (v_children) AND t.state IN ('waiting', 'uncommitted')
   ORDER BY t.id FOR UPDATE OF t;
  -- A failed parent ends a child that does not run after failures.
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
  -- The others count down; the last parent readies a waiting child.
  WITH counted AS (
    UPDATE cafmq.tasks_live t
       SET parents_left = t.parents_left - f.ended,
           state = CASE WHEN t.state = 'waiting'
                             AND t.parents_left - f.ended = 0
                        THEN 'pending' ELSE t.state END::cafmq.task_state,
           run_at = CASE WHEN t.state = 'waiting'
                              AND t.parents_left - f.ended = 0
                         THEN greatest(t.run_at, now()) ELSE t.run_at END
      FROM unnest(v_children, v_ended) AS f (child, ended)
     WHERE t.id = f.child AND t.state IN ('waiting', 'uncommitted')
    RETURNING t.id, t.state, t.channel_name)
  SELECT array_agg(c.id) FILTER (WHERE c.state = 'pending'),
         array_agg(DISTINCT c.channel_name) FILTER (WHERE c.state = 'pending')
    INTO v_ready, v_wake FROM counted c;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_ready || v_cancelled);
  IF v_parents IS NOT NULL THEN
    PERFORM cafmq.release_children(v_parents);
  END IF;
END
$$;
