-- Scheduling features: priorities, results, per-channel limits that hold
-- across runners, and periodic tasks. Each one costs nothing while unused:
-- a prioritized task enters two partial indexes that hold no other row, a
-- result is a NULL in the row until a handler stores one, and the claim
-- reads the limits table only when it is not empty.

-- Priorities -----------------------------------------------------------------

-- 0 (the default) is the lowest; within a channel a higher one runs first.
-- Ordered tasks run in spawn order, so they take none.
ALTER TABLE cafmq.tasks
  ADD COLUMN priority smallint NOT NULL DEFAULT 0,
  ADD CONSTRAINT tasks_priority CHECK (priority >= 0 AND (priority = 0 OR NOT ordered));

ALTER TYPE cafmq.spawn_spec ADD ATTRIBUTE priority integer;

-- The claim's per-channel order and its queue order for prioritized tasks.
CREATE INDEX tasks_prioritized_ready ON cafmq.tasks
  (channel_name, channel_args, priority DESC, run_at, seq)
  WHERE state = 'pending' AND NOT ordered AND priority > 0;
CREATE INDEX tasks_prioritized_queue ON cafmq.tasks (priority DESC, run_at, seq)
  WHERE state = 'pending' AND NOT ordered AND priority > 0;

-- Results --------------------------------------------------------------------

-- What a handler stored with its completion, in the same statement.
ALTER TABLE cafmq.tasks ADD COLUMN result jsonb;

CREATE OR REPLACE FUNCTION cafmq.spawn(p_tasks json) RETURNS TABLE(id uuid, created boolean)
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_specs cafmq.spawn_spec[];
  v_created uuid[];
BEGIN
  v_specs := ARRAY(SELECT x FROM json_populate_recordset(NULL::cafmq.spawn_spec, p_tasks) x);
  PERFORM pg_advisory_xact_lock(k)
    FROM (SELECT DISTINCT cafmq.channel_key(s.channel_name, s.channel_args) AS k
            FROM unnest(v_specs) s WHERE s.ordered ORDER BY 1) keys;
  IF NOT EXISTS (SELECT 1 FROM unnest(v_specs) s WHERE s.unique_key IS NOT NULL)
  THEN
    -- No unique keys (the usual case): nothing can conflict, so plain
    -- inserts (no speculative insertion, no join of created rows) straight
    -- from the array, in its order.
    INSERT INTO cafmq.tasks AS t
      (id, seq, name, channel_name, channel_args, state, ordered, max_attempts,
       run_at, backoff, backoff_cap, backoff_jitter, commit_deadline, timeout,
       deadline, unique_key, priority)
    SELECT o.id, nextval('cafmq.task_seq'), o.name, o.channel_name,
           o.channel_args,
           CASE WHEN o.commit_us IS NULL THEN 'pending'
                ELSE 'uncommitted' END::cafmq.task_state,
           o.ordered, o.max_attempts,
           coalesce(to_timestamp(o.run_at_us / 1e6),
                    now() + make_interval(secs => coalesce(o.delay_us, 0) / 1e6)),
           make_interval(secs => o.backoff_us / 1e6),
           make_interval(secs => o.backoff_cap_us / 1e6), o.jitter,
           now() + make_interval(secs => o.commit_us / 1e6),
           make_interval(secs => o.timeout_us / 1e6),
           to_timestamp(o.deadline_us / 1e6),
           NULL, coalesce(o.priority, 0)
      FROM unnest(v_specs) WITH ORDINALITY AS o
     ORDER BY o.ordinality;
    INSERT INTO cafmq.payloads (id, json, bytes)
    SELECT s.id, s.json::jsonb, decode(s.bytes, 'base64')
      FROM unnest(v_specs) s;
    PERFORM cafmq.notify_ready(ARRAY(
      SELECT s.channel_name FROM unnest(v_specs) s WHERE s.commit_us IS NULL));
    RETURN QUERY SELECT s.id, true FROM unnest(v_specs) WITH ORDINALITY AS s
                  ORDER BY s.ordinality;
    RETURN;
  END IF;
  WITH s AS (
    SELECT * FROM unnest(v_specs) WITH ORDINALITY AS u
  ), ins AS (
    INSERT INTO cafmq.tasks AS t
      (id, seq, name, channel_name, channel_args, state, ordered, max_attempts,
       run_at, backoff, backoff_cap, backoff_jitter, commit_deadline, timeout,
       deadline, unique_key, priority)
    SELECT o.id, nextval('cafmq.task_seq'), o.name, o.channel_name,
           o.channel_args,
           CASE WHEN o.commit_us IS NULL THEN 'pending'
                ELSE 'uncommitted' END::cafmq.task_state,
           o.ordered, o.max_attempts,
           coalesce(to_timestamp(o.run_at_us / 1e6),
                    now() + make_interval(secs => coalesce(o.delay_us, 0) / 1e6)),
           make_interval(secs => o.backoff_us / 1e6),
           make_interval(secs => o.backoff_cap_us / 1e6), o.jitter,
           now() + make_interval(secs => o.commit_us / 1e6),
           make_interval(secs => o.timeout_us / 1e6),
           to_timestamp(o.deadline_us / 1e6),
           o.unique_key, coalesce(o.priority, 0)
      FROM (SELECT * FROM s ORDER BY s.ordinality) o
    ON CONFLICT (unique_key)
      WHERE unique_key IS NOT NULL
        AND state IN ('uncommitted', 'pending', 'running') DO NOTHING
    RETURNING t.id
  ), pay AS (
    INSERT INTO cafmq.payloads (id, json, bytes)
    SELECT s.id, s.json::jsonb, decode(s.bytes, 'base64')
      FROM s JOIN ins ON ins.id = s.id
  )
  SELECT array_agg(ins.id) INTO v_created FROM ins;
  PERFORM cafmq.notify_ready(ARRAY(
    SELECT s.channel_name FROM unnest(v_specs) s WHERE s.commit_us IS NULL));
  IF cardinality(v_created) = cardinality(v_specs) THEN
    -- No duplicates (the usual case): every task was created.
    RETURN QUERY SELECT s.id, true FROM unnest(v_specs) WITH ORDINALITY AS s
                  ORDER BY s.ordinality;
    RETURN;
  END IF;
  RETURN QUERY
  SELECT coalesce(c.id, (SELECT t.id FROM cafmq.tasks t
                          WHERE t.unique_key = s.unique_key
                            AND t.state IN ('uncommitted', 'pending', 'running'))),
         c.id IS NOT NULL
    FROM unnest(v_specs) WITH ORDINALITY AS s
    LEFT JOIN unnest(v_created) AS c (id) ON c.id = s.id
   ORDER BY s.ordinality;
END
$$;

DROP FUNCTION cafmq.spawn(text, jsonb, text, text, timestamptz, integer, boolean,
                          text, interval, interval, interval, timestamptz,
                          text, uuid);
CREATE FUNCTION cafmq.spawn(name text, payload jsonb, channel_name text DEFAULT ''::text, channel_args text DEFAULT ''::text, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, max_attempts integer DEFAULT 5, ordered boolean DEFAULT false, unique_key text DEFAULT NULL::text, backoff interval DEFAULT '00:00:01'::interval, backoff_cap interval DEFAULT '01:00:00'::interval, timeout interval DEFAULT NULL::interval, deadline timestamp with time zone DEFAULT NULL::timestamp with time zone, jitter text DEFAULT NULL::text, id uuid DEFAULT NULL::uuid, priority integer DEFAULT 0) RETURNS uuid
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_id uuid := coalesce(spawn.id, cafmq.time_ordered_uuid());
  v_result uuid;
BEGIN
  IF spawn.name IS NULL OR spawn.name = '' OR octet_length(spawn.name) > 255 THEN
    RAISE EXCEPTION 'cafmq.spawn: name must be 1 to 255 bytes'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF spawn.channel_name IS NULL OR octet_length(spawn.channel_name) > 255 THEN
    RAISE EXCEPTION 'cafmq.spawn: channel_name must be at most 255 bytes (not NULL)'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF spawn.channel_args IS NULL OR octet_length(spawn.channel_args) > 4096 THEN
    RAISE EXCEPTION 'cafmq.spawn: channel_args must be at most 4096 bytes (not NULL)'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF spawn.unique_key IS NOT NULL
     AND (spawn.unique_key = '' OR octet_length(spawn.unique_key) > 1024) THEN
    RAISE EXCEPTION 'cafmq.spawn: unique_key must be 1 to 1024 bytes'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF spawn.max_attempts IS NULL OR spawn.max_attempts < 1 THEN
    RAISE EXCEPTION 'cafmq.spawn: max_attempts must be at least 1, got %',
      spawn.max_attempts USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF spawn.ordered IS NULL THEN
    RAISE EXCEPTION 'cafmq.spawn: ordered must not be NULL'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF spawn.backoff IS NULL OR spawn.backoff < interval '0'
     OR spawn.backoff_cap IS NULL OR spawn.backoff_cap < spawn.backoff THEN
    RAISE EXCEPTION 'cafmq.spawn: backoff must be >= 0 and backoff_cap >= backoff'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF spawn.jitter IS NOT NULL AND spawn.jitter NOT IN ('full', 'equal') THEN
    RAISE EXCEPTION 'cafmq.spawn: jitter must be full, equal or NULL, got %',
      spawn.jitter USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF spawn.timeout IS NOT NULL AND spawn.timeout <= interval '0' THEN
    RAISE EXCEPTION 'cafmq.spawn: timeout must be positive'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF spawn.priority IS NULL OR spawn.priority < 0 OR spawn.priority > 32767
     OR (spawn.priority > 0 AND spawn.ordered) THEN
    RAISE EXCEPTION 'cafmq.spawn: priority must be 0 to 32767, and 0 for an ordered task, got %',
      spawn.priority USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF spawn.payload IS NOT NULL
     AND octet_length(spawn.payload::text) > 1048576 THEN
    RAISE EXCEPTION 'cafmq.spawn: payload exceeds 1 MiB'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT s.id INTO v_result FROM cafmq.spawn(json_build_array(json_build_object(
    'id', v_id,
    'name', spawn.name,
    'channel_name', spawn.channel_name,
    'channel_args', spawn.channel_args,
    'ordered', spawn.ordered,
    'max_attempts', spawn.max_attempts,
    'backoff_us', (extract(epoch FROM spawn.backoff) * 1e6)::bigint,
    'backoff_cap_us', (extract(epoch FROM spawn.backoff_cap) * 1e6)::bigint,
    'run_at_us', (extract(epoch FROM spawn.run_at) * 1e6)::bigint,
    'timeout_us', (extract(epoch FROM spawn.timeout) * 1e6)::bigint,
    'deadline_us', (extract(epoch FROM spawn.deadline) * 1e6)::bigint,
    'unique_key', spawn.unique_key,
    'jitter', spawn.jitter,
    'priority', spawn.priority,
    'json', spawn.payload::text))) s;
  RETURN v_result;
END $$;

CREATE FUNCTION cafmq.complete(p_ids uuid[], p_attempts integer[],
                               p_results jsonb[]) RETURNS SETOF uuid
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
BEGIN
  WITH done AS (
    UPDATE cafmq.tasks t
       SET state = 'completed', finished_at = now(), lost_attempts = 0,
           result = f.result
      FROM unnest(p_ids, p_attempts, p_results) AS f (id, attempt, result)
     WHERE t.id = f.id AND t.attempt = f.attempt AND t.state = 'running'
    RETURNING t.id, t.channel_name, t.ordered)
  SELECT array_agg(done.id),
         array_agg(done.channel_name) FILTER (WHERE done.ordered)
    INTO v_done, v_wake FROM done;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;

-- The claim: as before, with prioritized tasks first within a channel and
-- in the fill.
CREATE OR REPLACE FUNCTION cafmq.claim_unpaused(p_node text, p_names text[], p_channels text[], p_paused text[], p_limit integer, p_lease interval, p_max_lost integer, p_cursor_name text, p_cursor_args text) RETURNS TABLE(id uuid, name text, channel_name text, channel_args text, attempt integer, max_attempts integer, ordered boolean, timeout interval, deadline timestamp with time zone, payload_json text, payload_bytes bytea, cursor_name text, cursor_args text, wait interval)
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
         p.bytes, NULL::text, NULL::text, NULL::interval
    FROM claimed c LEFT JOIN cafmq.payloads p ON p.id = c.id
   WHERE c.state = 'running';
  GET DIAGNOSTICS v_running = ROW_COUNT;
  IF v_running < cardinality(v_ids) THEN
    -- Some ended instead (rare): their ordered successors are heads now.
    PERFORM cafmq.notify_ready(ARRAY(
      SELECT t.channel_name FROM cafmq.tasks t
       WHERE t.id = ANY (v_ids) AND t.ordered
         AND t.state IN ('failed', 'cancelled')));
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
           - now() END;
END
$$;

-- Channel limits ---------------------------------------------------------------

-- Limits of a channel name that hold across every runner: at most
-- max_running of its tasks running at once (a lease that expires frees its
-- slot), and at most rate_limit starts in any window of rate_period.
-- recent_starts holds the starts inside the window (at most rate_limit).
-- cursor_args is where the next claim of the channel goes on, so that its
-- args share the slots round-robin.
CREATE TABLE cafmq.channel_limits (
  channel_name text COLLATE "C" PRIMARY KEY
    CHECK (octet_length(channel_name) <= 255),
  max_running integer CHECK (max_running >= 1),
  rate_limit integer CHECK (rate_limit BETWEEN 1 AND 100000),
  rate_period interval CHECK (rate_period > interval '0'),
  recent_starts timestamptz[] NOT NULL DEFAULT '{}',
  cursor_args text COLLATE "C",
  CHECK ((rate_limit IS NULL) = (rate_period IS NULL)),
  CHECK (max_running IS NOT NULL OR rate_limit IS NOT NULL)
);

-- Sets (or replaces) a channel's limits; NULLs leave that limit off.
CREATE FUNCTION cafmq.set_channel_limit(p_channel text, p_max_running integer,
                                        p_rate_limit integer,
                                        p_rate_period interval)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_channel IS NULL OR octet_length(p_channel) > 255 THEN
    RAISE EXCEPTION 'cafmq.set_channel_limit: the channel name must be at most 255 bytes (not NULL)'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_max_running IS NULL AND p_rate_limit IS NULL THEN
    RAISE EXCEPTION 'cafmq.set_channel_limit: set max_running, a rate limit or both'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_max_running < 1 THEN
    RAISE EXCEPTION 'cafmq.set_channel_limit: max_running must be at least 1, got %',
      p_max_running USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF (p_rate_limit IS NULL) <> (p_rate_period IS NULL)
     OR p_rate_limit NOT BETWEEN 1 AND 100000
     OR p_rate_period <= interval '0' THEN
    RAISE EXCEPTION 'cafmq.set_channel_limit: a rate limit is 1 to 100000 starts per positive period'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO cafmq.channel_limits AS l
      (channel_name, max_running, rate_limit, rate_period)
    VALUES (p_channel, p_max_running, p_rate_limit, p_rate_period)
    ON CONFLICT (channel_name) DO UPDATE
      SET max_running = EXCLUDED.max_running,
          rate_limit = EXCLUDED.rate_limit,
          rate_period = EXCLUDED.rate_period;
  -- A raised limit may free slots.
  PERFORM cafmq.notify_ready(ARRAY[p_channel]);
END $$;

-- Removes a channel's limits; false if it had none.
CREATE FUNCTION cafmq.clear_channel_limit(p_channel text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cafmq.channel_limits l WHERE l.channel_name = p_channel;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM cafmq.notify_ready(ARRAY[p_channel]);
  RETURN true;
END $$;

-- The claim, honouring the pauses and the channel limits. With neither (the
-- usual case) it costs two probes of empty tables.
--
-- A limited channel is left out of the ordinary claim. Each one this claim
-- may serve is locked (SKIP LOCKED: a channel another claim holds is left to
-- it), its free slots counted from the running tasks and the starts in its
-- window, and claimed on its own up to them, before the ordinary claim
-- fills what is left of the batch. The lock is held until the claim
-- commits, so the next claim of that channel counts what this one started.
CREATE OR REPLACE FUNCTION cafmq.claim(p_node text, p_names text[],
                                       p_channels text[], p_paused text[],
                                       p_limit integer, p_lease interval,
                                       p_max_lost integer, p_cursor_name text,
                                       p_cursor_args text)
RETURNS TABLE(id uuid, name text, channel_name text, channel_args text,
              attempt integer, max_attempts integer, ordered boolean,
              timeout interval, deadline timestamptz, payload_json text,
              payload_bytes bytea, cursor_name text, cursor_args text,
              wait interval)
LANGUAGE plpgsql AS $$
DECLARE
  v_limit record;
  v_row record;
  v_slots integer;
  v_taken integer;
  v_recent timestamptz[];
  v_cursor text;
  -- When a limited channel with ready tasks may have a free slot again.
  v_wait interval;
  -- The time of the starts this claim records: read once the channel's row
  -- is locked, so the starts of a channel are recorded in lock order and its
  -- window never drops a start a later claim's window still holds.
  v_now timestamptz;
BEGIN
  IF EXISTS (SELECT 1 FROM cafmq.pauses) THEN
    p_names := ARRAY(SELECT n FROM unnest(p_names) n
                      WHERE NOT EXISTS (SELECT 1 FROM cafmq.pauses p
                                         WHERE p.kind = 'task'
                                           AND p.value = n));
    p_paused := coalesce(p_paused, '{}')
                || ARRAY(SELECT p.value FROM cafmq.pauses p
                          WHERE p.kind = 'channel');
  END IF;
  IF EXISTS (SELECT 1 FROM cafmq.channel_limits) THEN
    FOR v_limit IN
      SELECT l.* FROM cafmq.channel_limits l
       WHERE (p_channels IS NULL OR p_channels = '{}'
              OR l.channel_name = ANY (p_channels))
         AND (p_paused IS NULL OR l.channel_name <> ALL (p_paused))
       ORDER BY l.channel_name
       FOR UPDATE SKIP LOCKED
    LOOP
      v_slots := p_limit;
      v_now := clock_timestamp();
      IF v_limit.max_running IS NOT NULL THEN
        v_slots := least(v_slots, v_limit.max_running - (
          SELECT count(*) FROM cafmq.tasks t
           WHERE t.state = 'running' AND t.run_at > now()
             AND t.channel_name = v_limit.channel_name)::integer);
      END IF;
      v_recent := '{}';
      IF v_limit.rate_limit IS NOT NULL THEN
        v_recent := ARRAY(SELECT s FROM unnest(v_limit.recent_starts) s
                           WHERE s > v_now - v_limit.rate_period ORDER BY s);
        v_slots := least(v_slots,
                         v_limit.rate_limit - cardinality(v_recent));
      END IF;
      v_taken := 0;
      v_cursor := v_limit.cursor_args;
      IF v_slots > 0 THEN
        FOR v_row IN
          SELECT * FROM cafmq.claim_unpaused(
            p_node, p_names, ARRAY[v_limit.channel_name::text], NULL, v_slots,
            p_lease, p_max_lost,
            CASE WHEN v_limit.cursor_args IS NOT NULL
                 THEN v_limit.channel_name::text END,
            v_limit.cursor_args) c
        LOOP
          IF v_row.id IS NULL THEN
            v_cursor := v_row.cursor_args;
            CONTINUE;
          END IF;
          v_taken := v_taken + 1;
          id := v_row.id; name := v_row.name;
          channel_name := v_row.channel_name;
          channel_args := v_row.channel_args; attempt := v_row.attempt;
          max_attempts := v_row.max_attempts; ordered := v_row.ordered;
          timeout := v_row.timeout; deadline := v_row.deadline;
          payload_json := v_row.payload_json;
          payload_bytes := v_row.payload_bytes;
          cursor_name := NULL; cursor_args := NULL; wait := NULL;
          RETURN NEXT;
        END LOOP;
        p_limit := p_limit - v_taken;
      END IF;
      -- The starts inside the window, this claim's included.
      IF v_limit.rate_limit IS NOT NULL THEN
        v_recent := v_recent || array_fill(v_now, ARRAY[v_taken]);
      END IF;
      IF v_taken > 0 OR v_cursor IS DISTINCT FROM v_limit.cursor_args
         OR v_recent IS DISTINCT FROM v_limit.recent_starts THEN
        UPDATE cafmq.channel_limits l
           SET recent_starts = v_recent, cursor_args = v_cursor
         WHERE l.channel_name = v_limit.channel_name;
      END IF;
      IF v_taken >= v_slots AND EXISTS (
           SELECT 1 FROM cafmq.tasks t
            WHERE t.state = 'pending' AND t.run_at <= now()
              AND t.channel_name = v_limit.channel_name
              AND t.name = ANY (p_names)) THEN
        -- Ready tasks wait for a slot. A start leaving the window frees one
        -- at a known time; a running task may end at any time (and its
        -- completion notifies nobody), so look again soon.
        v_wait := least(v_wait, greatest(interval '10 ms', least(
          CASE WHEN v_limit.rate_limit IS NOT NULL
                    AND cardinality(v_recent) >= v_limit.rate_limit
               THEN v_recent[cardinality(v_recent) - v_limit.rate_limit + 1]
                    + v_limit.rate_period - v_now
          END,
          CASE WHEN v_limit.max_running IS NOT NULL THEN interval '200 ms'
          END)));
      END IF;
      EXIT WHEN p_limit <= 0;
    END LOOP;
    -- Every limited channel stays out of the ordinary claim, those another
    -- claim holds included.
    p_paused := coalesce(p_paused, '{}')
                || ARRAY(SELECT l.channel_name::text FROM cafmq.channel_limits l);
  END IF;
  IF p_limit <= 0 THEN
    id := NULL; name := NULL; channel_name := NULL; channel_args := NULL;
    attempt := NULL; max_attempts := NULL; ordered := NULL; timeout := NULL;
    deadline := NULL; payload_json := NULL; payload_bytes := NULL;
    cursor_name := p_cursor_name; cursor_args := p_cursor_args;
    wait := interval '0';
    RETURN NEXT;
    RETURN;
  END IF;
  RETURN QUERY SELECT c.id, c.name, c.channel_name, c.channel_args, c.attempt,
                      c.max_attempts, c.ordered, c.timeout, c.deadline,
                      c.payload_json, c.payload_bytes, c.cursor_name,
                      c.cursor_args,
                      CASE WHEN c.id IS NULL THEN least(c.wait, v_wait)
                           ELSE c.wait END
                 FROM cafmq.claim_unpaused(
                   p_node, p_names, p_channels, p_paused, p_limit, p_lease,
                   p_max_lost, p_cursor_name, p_cursor_args) c;
END $$;

-- Periodic tasks ----------------------------------------------------------------

-- A schedule spawns one task per tick: of a cron expression (5 fields, or 6
-- with seconds) in a time zone, or every `every` since the epoch. A runner
-- fires the due ones under their row lock (FOR UPDATE SKIP LOCKED) and
-- moves next_run_at in the same transaction, so each tick is spawned once
-- however many runners run. The runner computes the cron ticks; the
-- database converts them from the time zone.
--
-- A tick up to `grace` late is on time and always spawned. Older ticks were
-- missed (no runner ran): `catch_up` says what happens to them, skip (none),
-- once (one task for all of them) or all (one per missed tick, the oldest
-- first, at most catch_up_limit).
CREATE TABLE cafmq.schedules (
  name text PRIMARY KEY
    CHECK (octet_length(name) BETWEEN 1 AND 255),
  -- The element of cafmq.spawn's JSON each tick spawns, without its id and
  -- unique key (the tick's key is cafmq.schedule:NAME@TIME).
  spec jsonb NOT NULL CHECK (jsonb_typeof(spec) = 'object'),
  cron text,
  every interval CHECK (every >= interval '1 second'),
  time_zone text NOT NULL DEFAULT 'UTC',
  catch_up text NOT NULL DEFAULT 'once'
    CHECK (catch_up IN ('skip', 'once', 'all')),
  catch_up_limit integer NOT NULL DEFAULT 100 CHECK (catch_up_limit >= 1),
  grace interval NOT NULL DEFAULT interval '1 minute'
    CHECK (grace >= interval '0'),
  next_run_at timestamptz NOT NULL,
  last_tick_at timestamptz,
  ticks bigint NOT NULL DEFAULT 0,
  missed bigint NOT NULL DEFAULT 0,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((cron IS NULL) <> (every IS NULL))
);

CREATE INDEX schedules_next ON cafmq.schedules (next_run_at);

-- Spawns the ticks of one due schedule (local times in its zone, from the
-- runner that holds its row lock) and moves it to p_next; p_missed ticks
-- were left out by its catch-up policy. Returns the tasks spawned.
CREATE FUNCTION cafmq.fire_schedule(p_name text, p_ticks timestamp[],
                                    p_next timestamp, p_missed bigint)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_schedule cafmq.schedules;
  v_spawned integer;
BEGIN
  SELECT * INTO v_schedule FROM cafmq.schedules s WHERE s.name = p_name;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  IF cardinality(p_ticks) > 0 THEN
    SELECT count(*) INTO v_spawned FROM cafmq.spawn((
    SELECT json_agg(v_schedule.spec || jsonb_build_object(
             'id', cafmq.time_ordered_uuid(),
             'unique_key', 'cafmq.schedule:' || p_name || '@'
                           || to_char((k.tick AT TIME ZONE v_schedule.time_zone)
                                        AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
             ORDER BY k.tick)
      FROM unnest(p_ticks) AS k (tick))) s
     WHERE s.created;
  ELSE
    v_spawned := 0;
  END IF;
  UPDATE cafmq.schedules s
     SET next_run_at = p_next AT TIME ZONE s.time_zone,
         last_tick_at = coalesce((SELECT max(k) FROM unnest(p_ticks) k)
                                   AT TIME ZONE s.time_zone, s.last_tick_at),
         ticks = s.ticks + v_spawned,
         missed = s.missed + p_missed,
         last_error = NULL
   WHERE s.name = p_name;
  RETURN v_spawned;
END $$;
