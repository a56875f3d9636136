-- SPDX-License-Identifier: BSD-3-Clause

-- The end of a claim (claim_ready): the locked tasks p_ids start running,
-- in one update through the primary key, each with a new attempt and a
-- lease of p_lease, and are returned with their payload. A claimed
-- 'running' task is one whose lease lapsed: a lost attempt, appended to
-- its earlier_attempts (ended when its lease did). A task that
-- must not run (again) ends here instead, moves to the history, and is
-- returned with `ended` (its new state) and `error`, so the runner reports
-- it (the live table holds no finished state, not even for a statement):
-- - cancelled: a cancel was requested (after its attempt was lost);
-- - failed: its deadline passed before it ran, the lease of its last
--   attempt lapsed, or it lost more than p_max_lost attempts in a row
--   (poison).
CREATE OR REPLACE FUNCTION cafmq.claim_start(
    p_ids uuid[], p_node text, p_lease interval, p_max_lost integer)
 RETURNS SETOF cafmq.claim_row
 LANGUAGE plpgsql
AS $$
DECLARE
  v_running bigint;
BEGIN
  RETURN QUERY
  WITH claimed AS (
    UPDATE cafmq.tasks_live t
       SET (state, attempt, run_at, started_at, node, finished_at, last_error,
            lost_attempts, earlier_attempts, worker) = (
         SELECT CASE WHEN e.ending IS NULL THEN 'running'::cafmq.task_state
                     ELSE t.state END,
                CASE WHEN e.ending IS NULL THEN t.attempt + 1
                     ELSE t.attempt END,
                CASE WHEN e.ending IS NULL THEN now() + p_lease
                     ELSE t.run_at END,
                CASE WHEN e.ending IS NULL THEN now() ELSE t.started_at END,
                CASE WHEN e.ending IS NULL THEN p_node ELSE t.node END,
                CASE WHEN e.ending IS NULL THEN t.finished_at ELSE now() END,
                CASE e.ending
                  WHEN 'cancelled' THEN t.last_error
                  WHEN 'deadline' THEN 'deadline passed before the task ran'
                  WHEN 'final attempt'
                    THEN 'lease expired during the final attempt'
                  WHEN 'poison'
                    THEN 'lost ' || (t.lost_attempts + 1) || ' attempts in a '
                         'row: its runner died or its lease expired '
                         'mid-attempt each time (poison task?)'
                  ELSE CASE WHEN t.state = 'running' THEN 'lease expired'
                            ELSE t.last_error END
                END,
                CASE WHEN t.state = 'running' THEN t.lost_attempts + 1
                     ELSE t.lost_attempts END,
                -- A lost attempt followed by a new one is kept (one that
                -- ends the task stays in the row's columns).
                CASE WHEN t.state = 'running' AND e.ending IS NULL
                  THEN coalesce(t.earlier_attempts, '[]')
                       || cafmq.attempt_entry(t.attempt, t.started_at,
                                              least(t.run_at, now()), 'lost',
                                              'lease expired', t.node,
                                              NULL, t.worker)
                  ELSE t.earlier_attempts END,
                -- The worker of the new attempt is recorded once it starts
                -- there (cafmq.record_workers).
                CASE WHEN e.ending IS NULL THEN NULL ELSE t.worker END
           -- Why the task ends instead of running; NULL: it runs.
           FROM (SELECT CASE
                   WHEN t.cancel_requested THEN 'cancelled'
                   WHEN t.deadline <= now() THEN 'deadline'
                   WHEN t.state = 'running' AND t.attempt >= t.max_attempts
                     THEN 'final attempt'
                   WHEN t.state = 'running' AND p_max_lost > 0
                        AND t.lost_attempts + 1 >= p_max_lost
                     THEN 'poison'
                 END AS ending) e)
      FROM unnest(p_ids) AS c (id)
     WHERE t.id = c.id AND t.state IN ('pending', 'running')
    RETURNING t.id, t.name, t.channel_name::text AS channel_name,
              t.channel_args::text AS channel_args, t.attempt,
              t.max_attempts, t.ordered, t.timeout, t.deadline,
              t.payload_json, t.payload_bytes, t.finished_at, t.parents_left,
              t.workflow_id)
  SELECT c.id, c.name, c.channel_name, c.channel_args, c.attempt,
         c.max_attempts, c.ordered, c.timeout, c.deadline,
         c.payload_json::text, c.payload_bytes, NULL::text, NULL::text,
         NULL::interval, NULL::text, NULL::text,
         CASE WHEN c.parents_left IS NOT NULL THEN
           (SELECT json_agg(json_build_object(
                     'id', r.id, 'name', r.name, 'state', r.state,
                     'result', r.result, 'error', r.last_error)
                   ORDER BY r.finished_at, r.id)::text
              FROM cafmq.task_parents e
              JOIN cafmq.parent_results r ON r.id = e.parent
             WHERE e.child = c.id) END,
         c.workflow_id
    FROM claimed c
   WHERE c.finished_at IS NULL;
  GET DIAGNOSTICS v_running = ROW_COUNT;
  IF v_running < cardinality(p_ids) THEN
    -- Some ended instead (rare): the update gave them their error and a
    -- finish time, and they move to the history now, cancelled if a cancel
    -- was asked and failed otherwise. Their ordered successors are heads
    -- now.
    RETURN QUERY
    WITH ended AS (
      DELETE FROM cafmq.tasks_live t
       WHERE t.id = ANY (p_ids) AND t.finished_at IS NOT NULL
      RETURNING t),
    moved AS (
      INSERT INTO cafmq.tasks_history
      SELECT h.* FROM ended e,
             cafmq.finished_row(e.t, CASE WHEN (e.t).cancel_requested
                                          THEN 'cancelled'
                                          ELSE 'failed' END::cafmq.task_state,
                                NULL, NULL, (e.t).lost_attempts,
                                CASE WHEN (e.t).state = 'running'
                                     THEN (e.t).worker END) h
      RETURNING *),
    counted AS (
      INSERT INTO cafmq.finished_counts
      SELECT (m.finished_at AT TIME ZONE 'UTC')::date, m.channel_name, m.state,
             count(*)
        FROM moved m GROUP BY 1, 2, 3)
    SELECT t.id, t.name, t.channel_name::text, t.channel_args::text,
           t.attempt, t.max_attempts, t.ordered, NULL::interval,
           NULL::timestamptz, NULL::text, NULL::bytea, NULL::text, NULL::text,
           NULL::interval, t.state::text, t.last_error, NULL::text,
           t.workflow_id
      FROM moved t;
    PERFORM cafmq.notify_ready(ARRAY(
      SELECT t.channel_name FROM cafmq.tasks_history t
       WHERE t.id = ANY (p_ids) AND t.ordered));
    PERFORM cafmq.release_children(ARRAY(
      SELECT t.id FROM cafmq.tasks_history t
       WHERE t.id = ANY (p_ids) AND t.has_children));
  END IF;
END
$$;
