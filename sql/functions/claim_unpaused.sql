-- SPDX-License-Identifier: BSD-3-Clause

-- The claim without pauses or limits (claim() calls it for the channels
-- neither holds back): up to p_limit ready tasks of p_names, fairly across
-- channels, ordered channels one task at a time under their advisory lock,
-- prioritized tasks first within a channel and in the fill. Each claimed
-- task is running with a new attempt and a lease of p_lease; a task whose
-- lease lapsed more than p_max_lost times ends as poison. p_cursor_* is
-- where the previous claim's round over the channels stopped. A task it
-- ends instead of running (cancel requested, deadline passed, the lease of
-- its last attempt lapsed, poison) comes back too, with `ended` (its new
-- state) and `error`, so the runner can report it; a claimed one has
-- `ended` NULL.
--
-- The columns ended and error are new: a new return type needs a DROP.
DROP FUNCTION IF EXISTS cafmq.claim_unpaused(text, text[], text[], text[],
    integer, interval, integer, text, text);
CREATE FUNCTION cafmq.claim_unpaused(
    p_node text,
    p_names text[],
    p_channels text[],
    p_paused text[],
    p_limit integer,
    p_lease interval,
    p_max_lost integer,
    p_cursor_name text,
    p_cursor_args text)
 RETURNS TABLE(
    id uuid,
    name text,
    channel_name text,
    channel_args text,
    attempt integer,
    max_attempts integer,
    ordered boolean,
    timeout interval,
    deadline timestamp with time zone,
    payload_json text,
    payload_bytes bytea,
    cursor_name text,
    cursor_args text,
    wait interval,
    ended text,
    error text)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_sort TO 'off'
 SET jit TO 'off'
AS $$
DECLARE
  v_ids uuid[] := '{}';
  -- Walk bound, inclusive. (n, a || chr(1)) is the first key after (n, a)
  -- because the columns use the C collation and text holds no NUL.
  v_from_name text := coalesce(p_cursor_name, '');
  v_from_args text := coalesce(p_cursor_args || chr(1), '');
  v_name text := p_cursor_name;
  v_args text := p_cursor_args;
  v_wrapped boolean := p_cursor_name IS NULL;
  v_visits integer := 0;
  v_cut boolean := false;
  v_next record;
  v_head record;
  v_has_head boolean;
  v_id uuid;
  v_running bigint;
  -- The channels pass 1 visited, when some are paused.
  v_seen_names text[] := '{}';
  v_seen_args text[] := '{}';
  -- Whether any ready-or-scheduled unordered task has a priority: one probe
  -- of an index that is empty while priorities are unused.
  v_prio boolean := EXISTS (
    SELECT 1 FROM cafmq.tasks t
     WHERE t.state = 'pending' AND NOT t.ordered AND t.priority > 0);
BEGIN
  IF p_channels = '{}' THEN
    p_channels := NULL;
  END IF;
  IF p_paused = '{}' THEN
    p_paused := NULL;
  END IF;
  -- Pass 1: one task from each active channel, round-robin from the cursor.
  LOOP
    IF v_visits >= p_limit THEN
      v_cut := true;
      EXIT;
    END IF;
    -- The next active channel; for an unordered one also its first task
    -- by run_at, seq (the order of tasks_unordered_ready).
    SELECT c.n, c.a, c.first_id, c.first_run_at, c.first_name INTO v_next
      FROM (
      (SELECT t.channel_name AS n, t.channel_args AS a, t.id AS first_id,
              t.run_at AS first_run_at, t.name AS first_name
         FROM cafmq.tasks t
        WHERE t.state = 'pending' AND NOT t.ordered
          AND (t.channel_name, t.channel_args) >= (v_from_name, v_from_args)
          AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
        ORDER BY t.channel_name, t.channel_args, t.run_at, t.seq LIMIT 1)
      UNION ALL
      (SELECT t.channel_name, t.channel_args, NULL::uuid, NULL::timestamptz,
              NULL::text
         FROM cafmq.tasks t
        WHERE t.ordered AND t.state IN ('uncommitted', 'pending', 'running')
          AND (t.channel_name, t.channel_args) >= (v_from_name, v_from_args)
          AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
        ORDER BY t.channel_name, t.channel_args LIMIT 1)) c
    ORDER BY c.n, c.a LIMIT 1;
    IF NOT FOUND THEN
      EXIT WHEN v_wrapped;
      v_wrapped := true;
      v_from_name := '';
      v_from_args := '';
      CONTINUE;
    END IF;
    EXIT WHEN v_wrapped AND p_cursor_name IS NOT NULL
          AND (v_next.n, v_next.a) > (p_cursor_name, p_cursor_args);
    IF v_next.n = ANY (p_paused) THEN
      -- Paused: (n || chr(1), '') is the first key after every (n, *), so
      -- the walk passes the whole name without reading its rows.
      v_from_name := v_next.n || chr(1);
      v_from_args := '';
      CONTINUE;
    END IF;
    v_name := v_next.n;
    v_args := v_next.a;
    v_from_name := v_name;
    v_from_args := v_args || chr(1);
    v_visits := v_visits + 1;
    IF p_paused IS NOT NULL THEN
      v_seen_names := v_seen_names || v_name;
      v_seen_args := v_seen_args || v_args;
    END IF;
    v_id := NULL;
    -- The head: the first live ordered task. A reservation in front that
    -- expired is removed here under its row lock; if a commit holds that
    -- lock, the reservation may still become live, so the channel waits.
    LOOP
      SELECT t.id, t.state, t.run_at, t.name, t.commit_deadline INTO v_head
        FROM cafmq.tasks t
       WHERE t.ordered AND t.state IN ('uncommitted', 'pending', 'running')
         AND t.channel_name = v_name AND t.channel_args = v_args
       ORDER BY t.seq LIMIT 1;
      v_has_head := FOUND;
      EXIT WHEN NOT v_has_head OR v_head.state <> 'uncommitted'
             OR v_head.commit_deadline > now();
      DELETE FROM cafmq.tasks t
       WHERE t.id = (SELECT x.id FROM cafmq.tasks x
                      WHERE x.id = v_head.id AND x.state = 'uncommitted'
                        AND x.commit_deadline <= now()
                      FOR UPDATE SKIP LOCKED);
      IF NOT FOUND THEN
        EXIT;
      END IF;
    END LOOP;
    IF v_has_head AND v_head.state <> 'uncommitted' AND v_head.run_at <= now()
       AND v_head.name = ANY (p_names) THEN
      -- Lock the head itself: skipping a locked head must not reach its successor.
      SELECT t.id INTO v_id FROM cafmq.tasks t
       WHERE t.id = v_head.id AND t.state = v_head.state AND t.run_at <= now()
       FOR UPDATE SKIP LOCKED;
    END IF;
    -- Unordered, prioritized: the channel's highest-priority ready task, a
    -- range of tasks_prioritized_ready.
    IF v_id IS NULL AND v_prio THEN
      SELECT t.id INTO v_id FROM cafmq.tasks t
       WHERE t.state = 'pending' AND NOT t.ordered AND t.priority > 0
         AND (t.channel_name, t.channel_args) >= (v_name, v_args)
         AND (t.channel_name, t.channel_args) <= (v_name, v_args)
         AND t.run_at <= now() AND t.name = ANY (p_names)
       ORDER BY t.channel_name, t.channel_args, t.priority DESC, t.run_at,
                t.seq LIMIT 1
       FOR UPDATE SKIP LOCKED;
    END IF;
    -- Unordered: the channel's first task if it is ready, through the
    -- primary key; else the first ready one it can lock (none if even the
    -- first task is scheduled later).
    IF v_id IS NULL AND v_next.first_id IS NOT NULL
       AND v_next.first_run_at <= now()
       AND v_next.first_name = ANY (p_names) THEN
      SELECT t.id INTO v_id FROM cafmq.tasks t
       WHERE t.id = v_next.first_id AND t.state = 'pending'
         AND NOT t.ordered AND t.run_at <= now()
       FOR UPDATE SKIP LOCKED;
    END IF;
    IF v_id IS NULL
       AND (v_next.first_id IS NULL OR v_next.first_run_at <= now()) THEN
      -- A range of tasks_unordered_ready, in its order. With equalities on
      -- the channel instead, a generic plan made while one channel held
      -- most ready tasks walks tasks_unordered_queue, reading the whole
      -- backlog for each channel whose tasks are behind it or locked.
      SELECT t.id INTO v_id FROM cafmq.tasks t
       WHERE t.state = 'pending' AND NOT t.ordered
         AND (t.channel_name, t.channel_args, t.run_at)
             >= (v_name, v_args, '-infinity')
         AND (t.channel_name, t.channel_args, t.run_at)
             <= (v_name, v_args, now())
         AND t.name = ANY (p_names)
       ORDER BY t.channel_name, t.channel_args, t.run_at, t.seq LIMIT 1
       FOR UPDATE SKIP LOCKED;
    END IF;
    IF v_id IS NOT NULL THEN
      v_ids := v_ids || v_id;
      EXIT WHEN cardinality(v_ids) >= p_limit;
    END IF;
  END LOOP;
  -- Pass 1b: prioritized tasks of any channel, highest first
  -- (tasks_prioritized_queue), before the queue order fills the batch.
  IF v_prio AND cardinality(v_ids) < p_limit THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks t
       WHERE t.state = 'pending' AND NOT t.ordered AND t.priority > 0
         AND t.run_at <= now() AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
         AND t.id <> ALL (v_ids)
       ORDER BY t.priority DESC, t.run_at, t.seq
       LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  END IF;
  -- Pass 2: unordered tasks whose lease expired (their runner is gone).
  IF cardinality(v_ids) < p_limit THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks t
       WHERE t.state = 'running' AND NOT t.ordered AND t.run_at <= now()
         AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
       ORDER BY t.run_at LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  END IF;
  -- Pass 3: fill the batch in queue order.
  IF cardinality(v_ids) < p_limit AND p_paused IS NULL THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks t
       WHERE t.state = 'pending' AND NOT t.ordered AND t.run_at <= now()
         AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND t.id <> ALL (v_ids)
       ORDER BY t.run_at, t.seq LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  ELSIF cardinality(v_ids) < p_limit THEN
    -- Some channels paused: queue order over the channels pass 1 visited
    -- (every active one unless the walk was cut), each read through its
    -- own index range. Filtering the whole queue instead would read every
    -- task of a paused backlog, in every claim. The lock re-checks the
    -- state: another claim may have taken a task since it was read.
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks t
       WHERE t.id = ANY (ARRAY(
               SELECT c.id FROM unnest(v_seen_names, v_seen_args) AS s (n, a)
               CROSS JOIN LATERAL (
                 -- A range of tasks_unordered_ready, as in pass 1.
                 SELECT x.id, x.run_at, x.seq FROM cafmq.tasks x
                  WHERE x.state = 'pending' AND NOT x.ordered
                    AND (x.channel_name, x.channel_args, x.run_at)
                        >= (s.n, s.a, '-infinity')
                    AND (x.channel_name, x.channel_args, x.run_at)
                        <= (s.n, s.a, now())
                    AND x.name = ANY (p_names) AND x.id <> ALL (v_ids)
                  ORDER BY x.channel_name, x.channel_args, x.run_at, x.seq
                  LIMIT p_limit - cardinality(v_ids)) c
               ORDER BY c.run_at, c.seq LIMIT p_limit - cardinality(v_ids)))
         AND t.state = 'pending' AND NOT t.ordered AND t.run_at <= now()
       FOR UPDATE SKIP LOCKED);
  END IF;
  -- One update through the primary key: tasks that must not run (again)
  -- end here, the others start running and are returned with their payload.
  -- A claimed 'running' task is one whose lease expired: a lost attempt.
  RETURN QUERY
  WITH claimed AS (
    UPDATE cafmq.tasks t
       SET (state, attempt, run_at, started_at, node, finished_at, last_error,
            lost_attempts) = (
         SELECT CASE WHEN e.ending IS NULL THEN 'running'
                     WHEN e.ending = 'cancelled' THEN 'cancelled'
                     ELSE 'failed' END::cafmq.task_state,
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
                     ELSE t.lost_attempts END
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
      FROM unnest(v_ids) AS c (id)
     WHERE t.id = c.id AND t.state IN ('pending', 'running')
    RETURNING t.id, t.name, t.channel_name::text AS channel_name,
              t.channel_args::text AS channel_args, t.attempt,
              t.max_attempts, t.ordered, t.timeout, t.deadline, t.state)
  SELECT c.id, c.name, c.channel_name, c.channel_args, c.attempt,
         c.max_attempts, c.ordered, c.timeout, c.deadline, p.json::text,
         p.bytes, NULL::text, NULL::text, NULL::interval, NULL::text,
         NULL::text
    FROM claimed c LEFT JOIN cafmq.payloads p ON p.id = c.id
   WHERE c.state = 'running';
  GET DIAGNOSTICS v_running = ROW_COUNT;
  IF v_running < cardinality(v_ids) THEN
    -- Some ended instead (rare): their ordered successors are heads now,
    -- and the runner reports them. Every locked task was updated, so those
    -- of v_ids that do not run are the ones this claim ended.
    PERFORM cafmq.notify_ready(ARRAY(
      SELECT t.channel_name FROM cafmq.tasks t
       WHERE t.id = ANY (v_ids) AND t.ordered
         AND t.state IN ('failed', 'cancelled')));
    RETURN QUERY
    SELECT t.id, t.name, t.channel_name::text, t.channel_args::text,
           t.attempt, t.max_attempts, t.ordered, NULL::interval,
           NULL::timestamptz, NULL::text, NULL::bytea, NULL::text, NULL::text,
           NULL::interval, t.state::text, t.last_error
      FROM cafmq.tasks t
     WHERE t.id = ANY (v_ids) AND t.state IN ('failed', 'cancelled');
  END IF;
  PERFORM cafmq.publish_status(v_ids);
  RETURN QUERY
  SELECT NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::integer,
         NULL::integer, NULL::boolean, NULL::interval, NULL::timestamptz, NULL::text,
         NULL::bytea, v_name, v_args,
         CASE WHEN v_cut AND cardinality(v_ids) > 0 THEN interval '0'
         ELSE least(
           -- ORDER BY ... LIMIT 1: a generic plan may compute min() by
           -- reading every running lease.
           (SELECT t.run_at FROM cafmq.tasks t
             WHERE t.state = 'pending' AND NOT t.ordered AND t.run_at > now()
             ORDER BY t.run_at LIMIT 1),
           (SELECT t.run_at FROM cafmq.tasks t
             WHERE t.state = 'pending' AND t.ordered AND t.run_at > now()
             ORDER BY t.run_at LIMIT 1),
           (SELECT t.run_at FROM cafmq.tasks t
             WHERE t.state = 'running' AND t.run_at > now()
             ORDER BY t.run_at LIMIT 1),
           (SELECT t.commit_deadline FROM cafmq.tasks t
             WHERE t.state = 'uncommitted' AND t.commit_deadline > now()
             ORDER BY t.commit_deadline LIMIT 1))
           - now() END,
         NULL::text, NULL::text;
END
$$;
