-- The cafmq schema as the migrations leave it, as printed by
-- scripts/schema-snapshot.sh (pg_dump, normalized). Generated: do not edit.

CREATE SCHEMA cafmq;

CREATE TYPE cafmq.claim_row AS (
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
	error text,
	parents text,
	workflow_id uuid
);

CREATE TYPE cafmq.spawn_spec AS (
	id uuid,
	name text,
	channel_name text,
	channel_args text,
	ordered boolean,
	max_attempts integer,
	backoff_us bigint,
	backoff_cap_us bigint,
	delay_us bigint,
	run_at_us bigint,
	commit_us bigint,
	timeout_us bigint,
	deadline_us bigint,
	unique_key text,
	json text,
	bytes text,
	jitter text,
	priority integer,
	parents uuid[],
	on_parent_failure text,
	workflow_id uuid
);

CREATE TYPE cafmq.task_state AS ENUM (
    'uncommitted',
    'waiting',
    'pending',
    'running',
    'completed',
    'failed',
    'cancelled'
);

CREATE FUNCTION cafmq.add_history_partitions(p_days_ahead integer) RETURNS integer
    LANGUAGE plpgsql
    AS $_$
DECLARE
  v_today date := (now() AT TIME ZONE 'UTC')::date;
  v_day date;
  v_name text;
  v_created integer := 0;
  v_moved bigint;
  v_lock_timeout text := current_setting('lock_timeout');
BEGIN
  PERFORM set_config('lock_timeout', '1s', true);
  FOR v_day IN SELECT v_today + d FROM generate_series(0, p_days_ahead) d
  LOOP
    v_name := 'tasks_history_' || to_char(v_day, 'YYYYMMDD');
    CONTINUE WHEN to_regclass('cafmq.' || v_name) IS NOT NULL;
    BEGIN
      -- No row of that day may reach the default partition meanwhile.
      LOCK TABLE cafmq.tasks_history_default IN SHARE ROW EXCLUSIVE MODE;
      EXECUTE format('CREATE TABLE cafmq.%I (LIKE cafmq.tasks_history '
                     'INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_name);
      EXECUTE format(
        'WITH waiting AS (DELETE FROM cafmq.tasks_history_default d '
        'WHERE d.finished_at >= $1 AND d.finished_at < $2 RETURNING d.*) '
        'INSERT INTO cafmq.%I SELECT * FROM waiting', v_name)
        USING v_day::timestamp AT TIME ZONE 'UTC',
              (v_day + 1)::timestamp AT TIME ZONE 'UTC';
      GET DIAGNOSTICS v_moved = ROW_COUNT;
      -- Rows moved in: statistics now, not when autovacuum gets to it (the
      -- last minute's throughput would scan the day meanwhile).
      IF v_moved > 0 THEN
        EXECUTE format('ANALYZE cafmq.%I', v_name);
      END IF;
      EXECUTE format('ALTER TABLE cafmq.tasks_history ATTACH PARTITION '
                     'cafmq.%I FOR VALUES FROM (%L) TO (%L)', v_name,
                     v_day::timestamp AT TIME ZONE 'UTC',
                     (v_day + 1)::timestamp AT TIME ZONE 'UTC');
      v_created := v_created + 1;
    EXCEPTION WHEN lock_not_available THEN
      EXIT;
    END;
  END LOOP;
  PERFORM set_config('lock_timeout', v_lock_timeout, true);
  RETURN v_created;
END
$_$;

CREATE FUNCTION cafmq.attempt_entry(p_attempt integer, p_started timestamp with time zone, p_ended timestamp with time zone, p_outcome text, p_error text, p_node text, p_retry_at timestamp with time zone, p_worker text DEFAULT NULL::text) RETURNS jsonb
    LANGUAGE sql STABLE
    AS $$
  SELECT jsonb_strip_nulls(jsonb_build_object(
           'attempt', p_attempt, 'started_at', p_started,
           'ended_at', p_ended, 'outcome', p_outcome, 'error', p_error,
           'node', p_node, 'worker', p_worker, 'retry_at', p_retry_at))
$$;

CREATE FUNCTION cafmq.attempt_logged(p_earlier jsonb, p_attempt integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT p_attempt <= coalesce((p_earlier -> -1 ->> 'attempt')::int, 0)
$$;

CREATE FUNCTION cafmq.cancel(p_id uuid) RETURNS text
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

CREATE FUNCTION cafmq.channel_index_key(p_name text, p_args text) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT (hashtextextended(p_name, 7305) & -16777216)
         | (hashtextextended(p_args, 7305) & 16777215)
$$;

CREATE FUNCTION cafmq.channel_key(p_name text, p_args text) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT hashtextextended(p_name || chr(31) || p_args, 7305)
$$;

CREATE FUNCTION cafmq.check_parents(p_specs cafmq.spawn_spec[]) RETURNS uuid[]
    LANGUAGE plpgsql
    AS $$
DECLARE
  v record;
BEGIN
  SELECT s.id, s.on_parent_failure AS policy INTO v FROM unnest(p_specs) s
   WHERE s.on_parent_failure NOT IN ('cancel', 'run') LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'cafmq.spawn: on_parent_failure of task % must be cancel or run, got %',
      v.id, v.policy USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT s.id INTO v FROM unnest(p_specs) s
   WHERE array_position(s.parents, NULL) IS NOT NULL LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'cafmq.spawn: a parent of task % is NULL', v.id
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT s.id INTO v FROM unnest(p_specs) s
   WHERE s.id = ANY (s.parents) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'cafmq.spawn: task % depends on itself', v.id
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT c.id, p.parent INTO v
    FROM unnest(p_specs) WITH ORDINALITY AS c, unnest(c.parents) AS p (parent),
         unnest(p_specs) WITH ORDINALITY AS q
   WHERE q.id = p.parent AND q.ordinality > c.ordinality LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'cafmq.spawn: parent % of task % comes after it in the call (parents come first)',
      v.parent, v.id USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- NOT IN: a hash of the call's ids, not a walk over them per parent (a
  -- fan-in of 10,000 spent 5.5 s in that walk).
  SELECT c.id, p.parent INTO v
    FROM unnest(p_specs) c, unnest(c.parents) AS p (parent)
   WHERE p.parent NOT IN (SELECT q.id FROM unnest(p_specs) q)
     AND NOT EXISTS (SELECT 1 FROM cafmq.tasks_live t WHERE t.id = p.parent)
     AND NOT EXISTS (SELECT 1 FROM cafmq.tasks_history t WHERE t.id = p.parent)
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'cafmq.spawn: parent % of task % is unknown: spawn it first, or in the same call',
      v.parent, v.id USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN ARRAY(SELECT DISTINCT p FROM unnest(p_specs) c, unnest(c.parents) p);
END
$$;

CREATE FUNCTION cafmq.checkpoint(p_id uuid, p_attempt integer, p_json text, p_bytes bytea, p_extra_attempts integer, p_lease interval) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
BEGIN
  UPDATE cafmq.tasks_live t
     SET max_attempts = t.max_attempts + greatest(coalesce(p_extra_attempts, 0), 0),
         run_at = CASE WHEN p_lease IS NULL THEN t.run_at
                       ELSE greatest(t.run_at, now() + p_lease) END,
         lost_attempts = 0,
         payload_json = coalesce(p_json::jsonb, t.payload_json),
         payload_bytes = coalesce(p_bytes, t.payload_bytes)
   WHERE t.id = p_id AND t.attempt = p_attempt AND t.state = 'running';
  RETURN FOUND;
END
$$;

CREATE FUNCTION cafmq.child_slots(p_parents bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$
  SELECT least(p_parents, 128)::integer
$$;

CREATE FUNCTION cafmq.claim(p_node text, p_names text[], p_channels text[], p_paused text[], p_limit integer, p_lease interval, p_max_lost integer, p_cursor_name text, p_cursor_args text) RETURNS SETOF cafmq.claim_row
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_row cafmq.claim_row;
  -- When a limited channel with ready tasks may have a free slot again.
  v_wait interval;
BEGIN
  IF EXISTS (SELECT 1 FROM cafmq.pauses) THEN
    SELECT x.names, x.paused INTO p_names, p_paused
      FROM cafmq.claim_pauses(p_names, p_paused) x;
  END IF;
  IF EXISTS (SELECT 1 FROM cafmq.channel_limits) THEN
    FOR v_row IN
      SELECT * FROM cafmq.claim_limited(p_node, p_names, p_channels, p_paused,
                                        p_limit, p_lease, p_max_lost)
    LOOP
      IF v_row.id IS NULL THEN
        v_wait := v_row.wait;
        CONTINUE;
      END IF;
      -- A task the claim ended takes no slot of the batch.
      IF v_row.ended IS NULL THEN
        p_limit := p_limit - 1;
      END IF;
      RETURN NEXT v_row;
    END LOOP;
    -- Every limited channel stays out of the rest of the claim, those
    -- another claim holds included.
    p_paused := coalesce(p_paused, '{}')
                || ARRAY(SELECT l.channel_name::text FROM cafmq.channel_limits l);
  END IF;
  IF p_limit <= 0 THEN
    v_row := NULL;
    v_row.cursor_name := p_cursor_name;
    v_row.cursor_args := p_cursor_args;
    v_row.wait := interval '0';
    RETURN NEXT v_row;
    RETURN;
  END IF;
  IF v_wait IS NULL THEN
    RETURN QUERY SELECT * FROM cafmq.claim_ready(
      p_node, p_names, p_channels, p_paused, p_limit, p_lease, p_max_lost,
      p_cursor_name, p_cursor_args);
    RETURN;
  END IF;
  FOR v_row IN
    SELECT * FROM cafmq.claim_ready(
      p_node, p_names, p_channels, p_paused, p_limit, p_lease, p_max_lost,
      p_cursor_name, p_cursor_args)
  LOOP
    IF v_row.id IS NULL THEN
      v_row.wait := least(v_row.wait, v_wait);
    END IF;
    RETURN NEXT v_row;
  END LOOP;
END $$;

CREATE FUNCTION cafmq.claim_fill(p_names text[], p_channels text[], p_paused text[], p_limit integer, p_ids uuid[], p_prio boolean, p_seen_keys bigint[]) RETURNS uuid[]
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_ids uuid[] := p_ids;
BEGIN
  -- Prioritized tasks of any channel, highest first
  -- (tasks_prioritized_queue), before the queue order fills the batch.
  IF p_prio AND cardinality(v_ids) < p_limit THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.state = 'pending' AND NOT t.ordered AND t.priority > 0
         AND t.run_at <= now() AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
         AND t.id <> ALL (v_ids)
       ORDER BY t.priority DESC, t.run_at, t.seq
       LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  END IF;
  -- Unordered tasks whose lease expired: a lost attempt.
  IF cardinality(v_ids) < p_limit THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.state = 'running' AND NOT t.ordered AND t.run_at <= now()
         AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
       ORDER BY t.run_at LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  END IF;
  -- The queue order.
  IF cardinality(v_ids) < p_limit AND p_paused IS NULL THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.state = 'pending' AND NOT t.ordered AND t.run_at <= now()
         AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND t.id <> ALL (v_ids)
       ORDER BY t.run_at, t.seq LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  ELSIF cardinality(v_ids) < p_limit THEN
    -- Some channels paused: queue order over the keys the walk visited
    -- (every active one unless the walk was cut), each read through its
    -- own index range. Filtering the whole queue instead would read every
    -- task of a paused backlog, in every claim. The lock re-checks the
    -- state: another claim may have taken a task since it was read.
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.id = ANY (ARRAY(
               SELECT c.id FROM unnest(p_seen_keys) AS s (k)
               CROSS JOIN LATERAL (
                 -- A range of tasks_unordered_ready, as in the walk.
                 SELECT x.id, x.run_at, x.seq FROM cafmq.tasks_live x
                  WHERE x.state = 'pending' AND NOT x.ordered
                    AND (cafmq.channel_index_key(x.channel_name,
                                                 x.channel_args), x.run_at)
                        >= (s.k, '-infinity')
                    AND (cafmq.channel_index_key(x.channel_name,
                                                 x.channel_args), x.run_at)
                        <= (s.k, now())
                    AND x.name = ANY (p_names) AND x.id <> ALL (v_ids)
                    AND (p_channels IS NULL
                         OR x.channel_name = ANY (p_channels))
                    AND x.channel_name <> ALL (p_paused)
                  ORDER BY cafmq.channel_index_key(x.channel_name,
                                                   x.channel_args),
                           x.run_at, x.seq
                  LIMIT p_limit - cardinality(v_ids)) c
               ORDER BY c.run_at, c.seq LIMIT p_limit - cardinality(v_ids)))
         AND t.state = 'pending' AND NOT t.ordered AND t.run_at <= now()
       FOR UPDATE SKIP LOCKED);
  END IF;
  RETURN v_ids;
END
$$;

CREATE FUNCTION cafmq.claim_ids(p_node text, p_names text[], p_channels text[], p_paused text[], p_ids uuid[], p_lease interval, p_max_lost integer) RETURNS SETOF cafmq.claim_row
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_ids uuid[] := '{}';
  v_last cafmq.claim_row;
  -- The names this runner runs, paused ones included.
  v_runs text[] := p_names;
BEGIN
  IF p_channels = '{}' THEN
    p_channels := NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM cafmq.pauses) THEN
    SELECT x.names, x.paused INTO p_names, p_paused
      FROM cafmq.claim_pauses(p_names, p_paused) x;
  END IF;
  -- A waiting prioritized task goes first (claim_ready's v_prio): the fair
  -- claim takes it.
  IF NOT EXISTS (SELECT 1 FROM cafmq.tasks_live t
                  WHERE t.state = 'pending' AND NOT t.ordered
                    AND t.priority > 0) THEN
    v_ids := ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.id = ANY (p_ids) AND t.state::text = 'pending'
         AND NOT t.ordered AND t.run_at <= now() AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
         AND NOT EXISTS (SELECT 1 FROM cafmq.channel_limits l
                          WHERE l.channel_name = t.channel_name)
       ORDER BY t.run_at, t.seq
       FOR UPDATE SKIP LOCKED);
  END IF;
  IF cardinality(v_ids) > 0 THEN
    RETURN QUERY SELECT * FROM cafmq.claim_start(v_ids, p_node, p_lease,
                                                 p_max_lost);
    PERFORM cafmq.publish_status(v_ids);
  END IF;
  v_last.wait := CASE WHEN EXISTS (
                   SELECT 1 FROM cafmq.tasks_live t
                    WHERE t.id = ANY (p_ids) AND t.id <> ALL (v_ids)
                      AND t.state = 'pending' AND t.name = ANY (v_runs))
                 THEN interval '0' END;
  RETURN NEXT v_last;
END
$$;

CREATE FUNCTION cafmq.claim_limited(p_node text, p_names text[], p_channels text[], p_paused text[], p_limit integer, p_lease interval, p_max_lost integer) RETURNS SETOF cafmq.claim_row
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_limit record;
  v_row cafmq.claim_row;
  v_last cafmq.claim_row;
  v_slots integer;
  v_taken integer;
  v_recent timestamptz[];
  v_cursor text;
  -- The time of the starts this claim records: read once the channel's row
  -- is locked, so the starts of a channel are recorded in lock order and its
  -- window never drops a start a later claim's window still holds.
  v_now timestamptz;
BEGIN
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
        SELECT count(*) FROM cafmq.tasks_live t
         WHERE t.state = 'running' AND t.run_at > now()
           AND t.channel_name = v_limit.channel_name)::integer);
    END IF;
    v_recent := '{}';
    IF v_limit.rate_limit IS NOT NULL THEN
      v_recent := ARRAY(SELECT s FROM unnest(v_limit.recent_starts) s
                         WHERE s > v_now - v_limit.rate_period ORDER BY s);
      v_slots := least(v_slots, v_limit.rate_limit - cardinality(v_recent));
    END IF;
    v_taken := 0;
    v_cursor := v_limit.cursor_args;
    IF v_slots > 0 THEN
      FOR v_row IN
        SELECT * FROM cafmq.claim_ready(
          p_node, p_names, ARRAY[v_limit.channel_name::text], NULL, v_slots,
          p_lease, p_max_lost,
          CASE WHEN v_limit.cursor_args IS NOT NULL
               THEN v_limit.channel_name::text END,
          v_limit.cursor_args)
      LOOP
        IF v_row.id IS NULL THEN
          v_cursor := v_row.cursor_args;
          CONTINUE;
        END IF;
        -- A task the claim ended takes no slot.
        IF v_row.ended IS NULL THEN
          v_taken := v_taken + 1;
        END IF;
        RETURN NEXT v_row;
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
         SELECT 1 FROM cafmq.tasks_live t
          WHERE t.state = 'pending' AND t.run_at <= now()
            AND t.channel_name = v_limit.channel_name
            AND t.name = ANY (p_names)) THEN
      -- Ready tasks wait for a slot. A start leaving the window frees one
      -- at a known time; a running task may end at any time (and its
      -- completion notifies nobody), so look again soon.
      v_last.wait := least(v_last.wait, greatest(interval '10 ms', least(
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
  RETURN NEXT v_last;
END $$;

CREATE FUNCTION cafmq.claim_next_due() RETURNS timestamp with time zone
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_clock timestamptz := clock_timestamp();
BEGIN
  -- ORDER BY ... LIMIT 1: a generic plan may compute min() by reading every
  -- running lease.
  RETURN least(
    (SELECT t.run_at FROM cafmq.tasks_live t
      WHERE t.state = 'pending' AND NOT t.ordered AND t.run_at > now()
        AND (t.run_at > v_clock OR t.run_at <> t.created_at)
      ORDER BY t.run_at LIMIT 1),
    (SELECT t.run_at FROM cafmq.tasks_live t
      WHERE t.state = 'pending' AND t.ordered AND t.run_at > now()
        AND (t.run_at > v_clock OR t.run_at <> t.created_at)
      ORDER BY t.run_at LIMIT 1),
    (SELECT t.run_at FROM cafmq.tasks_live t
      WHERE t.state = 'running' AND t.run_at > now()
      ORDER BY t.run_at LIMIT 1),
    (SELECT t.commit_deadline FROM cafmq.tasks_live t
      WHERE t.state = 'uncommitted' AND t.commit_deadline > now()
      ORDER BY t.commit_deadline LIMIT 1));
END
$$;

CREATE FUNCTION cafmq.claim_pauses(p_names text[], p_paused text[], OUT names text[], OUT paused text[]) RETURNS record
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
  names := ARRAY(SELECT n FROM unnest(p_names) n
                  WHERE NOT EXISTS (SELECT 1 FROM cafmq.pauses p
                                     WHERE p.kind = 'task' AND p.value = n));
  paused := coalesce(p_paused, '{}')
            || ARRAY(SELECT p.value FROM cafmq.pauses p
                      WHERE p.kind = 'channel');
END
$$;

CREATE FUNCTION cafmq.claim_ready(p_node text, p_names text[], p_channels text[], p_paused text[], p_limit integer, p_lease interval, p_max_lost integer, p_cursor_name text, p_cursor_args text) RETURNS SETOF cafmq.claim_row
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
  v_walk record;
  v_ids uuid[];
  v_last cafmq.claim_row;
  -- Whether any ready-or-scheduled unordered task has a priority: one probe
  -- of an index that is empty while priorities are unused.
  v_prio boolean := EXISTS (
    SELECT 1 FROM cafmq.tasks_live t
     WHERE t.state = 'pending' AND NOT t.ordered AND t.priority > 0);
BEGIN
  IF p_channels = '{}' THEN
    p_channels := NULL;
  END IF;
  IF p_paused = '{}' THEN
    p_paused := NULL;
  END IF;
  SELECT * INTO v_walk FROM cafmq.claim_walk(
    p_names, p_channels, p_paused, p_limit, v_prio, p_cursor_name,
    p_cursor_args);
  v_ids := v_walk.ids;
  IF cardinality(v_ids) < p_limit THEN
    v_ids := cafmq.claim_fill(p_names, p_channels, p_paused, p_limit, v_ids,
                              v_prio, v_walk.seen_keys);
  END IF;
  RETURN QUERY SELECT * FROM cafmq.claim_start(v_ids, p_node, p_lease,
                                               p_max_lost);
  PERFORM cafmq.publish_status(v_ids);
  v_last.cursor_name := v_walk.cursor_name;
  v_last.cursor_args := v_walk.cursor_args;
  v_last.wait := CASE WHEN v_walk.cut AND cardinality(v_ids) > 0
                      THEN interval '0'
                      ELSE cafmq.claim_next_due() - now() END;
  RETURN NEXT v_last;
END
$$;

CREATE FUNCTION cafmq.claim_start(p_ids uuid[], p_node text, p_lease interval, p_max_lost integer) RETURNS SETOF cafmq.claim_row
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

CREATE FUNCTION cafmq.claim_walk(p_names text[], p_channels text[], p_paused text[], p_limit integer, p_prio boolean, p_cursor_name text, p_cursor_args text, OUT ids uuid[], OUT cursor_name text, OUT cursor_args text, OUT cut boolean, OUT seen_keys bigint[]) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
  c_max constant bigint := 9223372036854775807;
  -- The key ranges, in key order: one per name of p_channels, or all keys.
  v_lo bigint[] := ARRAY[-c_max - 1];
  v_hi bigint[] := ARRAY[c_max];
  v_seg integer := 1;
  v_ckey bigint;
  -- Where the walk starts in the range: unordered tasks from key v_ufrom
  -- (NULL: none left), ordered channels from (v_ok, v_on, v_oa), where
  -- (n, a || chr(1)) is the first text pair after (n, a): the columns use
  -- the C collation and text holds no NUL.
  v_ufrom bigint;
  v_ok bigint;
  v_on text := '';
  v_oa text := '';
  -- Whether the walk has gone past the last range to the first again;
  -- from then on it stops at the cursor.
  v_wrapped boolean := p_cursor_name IS NULL;
  v_visits integer := 0;
  v_part record;
BEGIN
  ids := '{}';
  cut := false;
  cursor_name := p_cursor_name;
  cursor_args := p_cursor_args;
  seen_keys := '{}';
  IF p_channels IS NOT NULL THEN
    SELECT array_agg(b ORDER BY b), array_agg(b | 16777215 ORDER BY b)
      INTO v_lo, v_hi
      FROM (SELECT DISTINCT hashtextextended(c, 7305) & -16777216 AS b
              FROM unnest(p_channels) c) x;
  END IF;
  v_ufrom := v_lo[1];
  v_ok := v_lo[1];
  IF p_cursor_name IS NOT NULL THEN
    -- Just after the cursor, in the range that holds it or the next.
    v_ckey := cafmq.channel_index_key(p_cursor_name, p_cursor_args);
    WHILE v_seg <= cardinality(v_hi) AND v_hi[v_seg] < v_ckey LOOP
      v_seg := v_seg + 1;
    END LOOP;
    IF v_seg > cardinality(v_hi) THEN
      v_seg := 1;
      v_wrapped := true;
    ELSIF v_lo[v_seg] > v_ckey THEN
      v_ufrom := v_lo[v_seg];
      v_ok := v_lo[v_seg];
    ELSE
      v_ufrom := CASE WHEN v_ckey < v_hi[v_seg] THEN v_ckey + 1 END;
      v_ok := v_ckey;
      v_on := p_cursor_name;
      v_oa := p_cursor_args || chr(1);
    END IF;
  END IF;
  LOOP
    SELECT * INTO v_part FROM cafmq.claim_walk_range(
      v_hi[v_seg], v_ufrom, v_ok, v_on, v_oa,
      CASE WHEN v_wrapped THEN v_ckey END, p_cursor_name, p_cursor_args,
      p_limit - v_visits, p_limit - cardinality(ids), p_names, p_channels,
      p_paused, p_prio);
    ids := ids || v_part.ids;
    seen_keys := seen_keys || v_part.seen_keys;
    v_visits := v_visits + v_part.visits;
    IF v_part.visits > 0 THEN
      cursor_name := v_part.last_name;
      cursor_args := v_part.last_args;
    END IF;
    IF v_visits >= p_limit AND cardinality(ids) < p_limit THEN
      cut := true;
    END IF;
    EXIT WHEN v_part.stopped;
    -- The next range, or the first again.
    v_seg := v_seg + 1;
    IF v_seg > cardinality(v_lo) THEN
      EXIT WHEN v_wrapped;
      v_wrapped := true;
      v_seg := 1;
    END IF;
    v_ufrom := v_lo[v_seg];
    v_ok := v_lo[v_seg];
    v_on := '';
    v_oa := '';
  END LOOP;
END
$$;

CREATE FUNCTION cafmq.claim_walk_head(p_key bigint, p_name text, p_args text, p_names text[]) RETURNS uuid
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_head record;
  v_id uuid;
BEGIN
  LOOP
    SELECT t.id, t.state, t.run_at, t.name, t.commit_deadline INTO v_head
      FROM cafmq.tasks_live t
     WHERE t.ordered
       AND t.state IN ('uncommitted', 'waiting', 'pending', 'running')
       AND cafmq.channel_index_key(t.channel_name, t.channel_args) = p_key
       AND t.channel_name = p_name AND t.channel_args = p_args
     ORDER BY cafmq.channel_index_key(t.channel_name, t.channel_args),
              t.channel_name, t.channel_args, t.seq
     LIMIT 1;
    EXIT WHEN NOT FOUND OR v_head.state <> 'uncommitted'
           OR v_head.commit_deadline > now();
    EXIT WHEN NOT cafmq.expire_reservation(v_head.id);
  END LOOP;
  IF v_head.state IN ('pending', 'running') AND v_head.run_at <= now()
     AND v_head.name = ANY (p_names) THEN
    SELECT t.id INTO v_id FROM cafmq.tasks_live t
     WHERE t.id = v_head.id AND t.state = v_head.state AND t.run_at <= now()
     FOR UPDATE SKIP LOCKED;
  END IF;
  RETURN v_id;
END
$$;

CREATE FUNCTION cafmq.claim_walk_key(p_key bigint, p_first_id uuid, p_first_run_at timestamp with time zone, p_first_name text, p_first_channel text, p_names text[], p_channels text[], p_paused text[], p_prio boolean) RETURNS uuid
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_id uuid;
BEGIN
  -- A range of tasks_prioritized_ready.
  IF p_prio THEN
    SELECT t.id INTO v_id FROM cafmq.tasks_live t
     WHERE t.state = 'pending' AND NOT t.ordered AND t.priority > 0
       AND cafmq.channel_index_key(t.channel_name, t.channel_args) = p_key
       AND t.run_at <= now() AND t.name = ANY (p_names)
       AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
       AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
     ORDER BY cafmq.channel_index_key(t.channel_name, t.channel_args),
              t.priority DESC, t.run_at, t.seq
     LIMIT 1
     FOR UPDATE SKIP LOCKED;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
  END IF;
  IF p_first_run_at > now() THEN
    RETURN NULL;
  END IF;
  IF p_first_name = ANY (p_names)
     AND (p_channels IS NULL OR p_first_channel = ANY (p_channels))
     AND (p_paused IS NULL OR p_first_channel <> ALL (p_paused)) THEN
    SELECT t.id INTO v_id FROM cafmq.tasks_live t
     WHERE t.id = p_first_id AND t.state = 'pending' AND NOT t.ordered
       AND t.run_at <= now()
     FOR UPDATE SKIP LOCKED;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
  END IF;
  -- A range of tasks_unordered_ready, in its order. With an equality on the
  -- key instead, a generic plan made while one key held most ready tasks
  -- walks tasks_unordered_queue, reading the whole backlog for each key
  -- whose tasks are behind it or locked.
  SELECT t.id INTO v_id FROM cafmq.tasks_live t
   WHERE t.state = 'pending' AND NOT t.ordered
     AND (cafmq.channel_index_key(t.channel_name, t.channel_args), t.run_at)
         >= (p_key, '-infinity')
     AND (cafmq.channel_index_key(t.channel_name, t.channel_args), t.run_at)
         <= (p_key, now())
     AND t.name = ANY (p_names)
     AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
     AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
   ORDER BY cafmq.channel_index_key(t.channel_name, t.channel_args),
            t.run_at, t.seq
   LIMIT 1
   FOR UPDATE SKIP LOCKED;
  RETURN v_id;
END
$$;

CREATE FUNCTION cafmq.claim_walk_range(p_hi bigint, p_ufrom bigint, p_ok bigint, p_on text, p_oa text, p_stop_key bigint, p_stop_name text, p_stop_args text, p_visits integer, p_ids integer, p_names text[], p_channels text[], p_paused text[], p_prio boolean, OUT ids uuid[], OUT visits integer, OUT last_name text, OUT last_args text, OUT seen_keys bigint[], OUT stopped boolean) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
  -- The next key with unordered work (v_uk NULL: none) and its first task
  -- by run_at, seq; the next ordered channel (v_ook NULL: none). Each is
  -- looked up again only once the walk has passed it.
  v_ufresh boolean := false;
  v_uk bigint;
  v_un text;
  v_ua text;
  v_uid uuid;
  v_urun timestamptz;
  v_uname text;
  v_ofresh boolean := false;
  v_ook bigint;
  v_oon text;
  v_ooa text;
  -- The channel visited.
  v_k bigint;
  v_n text;
  v_a text;
  v_id uuid;
BEGIN
  ids := '{}';
  visits := 0;
  seen_keys := '{}';
  stopped := true;
  LOOP
    EXIT WHEN visits >= p_visits OR cardinality(ids) >= p_ids;
    IF NOT v_ufresh THEN
      v_uk := NULL;
      IF p_ufrom IS NOT NULL THEN
        -- A range of tasks_unordered_ready.
        SELECT cafmq.channel_index_key(t.channel_name, t.channel_args),
               t.channel_name, t.channel_args, t.id, t.run_at, t.name
          INTO v_uk, v_un, v_ua, v_uid, v_urun, v_uname
          FROM cafmq.tasks_live t
         WHERE t.state = 'pending' AND NOT t.ordered
           AND cafmq.channel_index_key(t.channel_name, t.channel_args)
               BETWEEN p_ufrom AND p_hi
         ORDER BY cafmq.channel_index_key(t.channel_name, t.channel_args),
                  t.run_at, t.seq
         LIMIT 1;
      END IF;
      v_ufresh := true;
    END IF;
    IF NOT v_ofresh THEN
      v_ook := NULL;
      -- A range of tasks_ordered_live.
      SELECT cafmq.channel_index_key(t.channel_name, t.channel_args),
             t.channel_name, t.channel_args
        INTO v_ook, v_oon, v_ooa
        FROM cafmq.tasks_live t
       WHERE t.ordered
         AND t.state IN ('uncommitted', 'waiting', 'pending', 'running')
         AND (cafmq.channel_index_key(t.channel_name, t.channel_args),
              t.channel_name, t.channel_args) >= (p_ok, p_on, p_oa)
         AND cafmq.channel_index_key(t.channel_name, t.channel_args) <= p_hi
       ORDER BY cafmq.channel_index_key(t.channel_name, t.channel_args),
                t.channel_name, t.channel_args
       LIMIT 1;
      v_ofresh := true;
    END IF;
    IF v_ook IS NULL OR (v_uk, v_un, v_ua) < (v_ook, v_oon, v_ooa) THEN
      v_k := v_uk;
      v_n := v_un;
      v_a := v_ua;
    ELSE
      v_k := v_ook;
      v_n := v_oon;
      v_a := v_ooa;
    END IF;
    IF v_k IS NULL THEN
      stopped := false;
      EXIT;
    END IF;
    EXIT WHEN p_stop_key IS NOT NULL
          AND (v_k, v_n, v_a) > (p_stop_key, p_stop_name, p_stop_args);
    IF v_n = ANY (p_paused) THEN
      IF (v_k | 16777215) >= p_hi THEN
        stopped := false;
        EXIT;
      END IF;
      p_ufrom := CASE WHEN p_ufrom IS NOT NULL THEN (v_k | 16777215) + 1 END;
      p_ok := (v_k | 16777215) + 1;
      p_on := '';
      p_oa := '';
      v_ufresh := false;
      v_ofresh := false;
      CONTINUE;
    END IF;
    visits := visits + 1;
    last_name := v_n;
    last_args := v_a;
    v_id := NULL;
    IF (v_ook, v_oon, v_ooa) = (v_k, v_n, v_a) THEN
      v_id := cafmq.claim_walk_head(v_k, v_n, v_a, p_names);
      v_ofresh := false;
    END IF;
    IF v_uk = v_k THEN
      IF p_paused IS NOT NULL THEN
        seen_keys := seen_keys || v_k;
      END IF;
      IF v_id IS NULL THEN
        v_id := cafmq.claim_walk_key(v_k, v_uid, v_urun, v_uname, v_un,
                                     p_names, p_channels, p_paused, p_prio);
      END IF;
      p_ufrom := CASE WHEN v_k < p_hi THEN v_k + 1 END;
      v_ufresh := false;
    END IF;
    p_ok := v_k;
    p_on := v_n;
    p_oa := v_a || chr(1);
    IF v_id IS NOT NULL THEN
      ids := ids || v_id;
    END IF;
  END LOOP;
END
$$;

CREATE FUNCTION cafmq.clear(p_channel_names text[]) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_live bigint;
  v_finished bigint;
  v_parents uuid[];
BEGIN
  WITH live AS (
    DELETE FROM cafmq.tasks_live t WHERE t.channel_name = ANY (p_channel_names)
    RETURNING t.id, t.has_children)
  SELECT count(*), array_agg(l.id) FILTER (WHERE l.has_children)
    INTO v_live, v_parents FROM live l;
  DELETE FROM cafmq.tasks_history t
   WHERE t.channel_name = ANY (p_channel_names);
  GET DIAGNOSTICS v_finished = ROW_COUNT;
  IF v_parents IS NOT NULL THEN
    PERFORM cafmq.release_children(v_parents);
  END IF;
  RETURN v_live + v_finished;
END
$$;

CREATE FUNCTION cafmq.clear_all() RETURNS bigint
    LANGUAGE sql
    AS $$
  WITH live AS (DELETE FROM cafmq.tasks_live RETURNING 1),
  finished AS (DELETE FROM cafmq.tasks_history RETURNING 1),
  edges AS (DELETE FROM cafmq.task_parents),
  waits AS (DELETE FROM cafmq.child_waits),
  results AS (DELETE FROM cafmq.parent_results)
  SELECT (SELECT count(*) FROM live) + (SELECT count(*) FROM finished)
$$;

CREATE FUNCTION cafmq.clear_channel_limit(p_channel text) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
BEGIN
  DELETE FROM cafmq.channel_limits l WHERE l.channel_name = p_channel;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM cafmq.notify_ready(ARRAY[p_channel]);
  RETURN true;
END $$;

CREATE FUNCTION cafmq.commit(p_ids uuid[]) RETURNS SETOF uuid
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
BEGIN
  WITH c AS (
    UPDATE cafmq.tasks_live t
       SET state = CASE WHEN t.parents_left > 0 THEN 'waiting'
                        ELSE 'pending' END::cafmq.task_state,
           commit_deadline = NULL
     WHERE t.id = ANY (p_ids) AND t.state = 'uncommitted'
       AND t.commit_deadline > now()
    RETURNING t.id, t.channel_name, t.state)
  SELECT array_agg(c.id),
         array_agg(c.channel_name) FILTER (WHERE c.state = 'pending')
    INTO v_done, v_wake FROM c;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;

CREATE FUNCTION cafmq.complete(p_ids uuid[], p_attempts integer[], p_results jsonb[] DEFAULT NULL::jsonb[], p_workers text[] DEFAULT NULL::text[]) RETURNS SETOF uuid
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

CREATE FUNCTION cafmq.count_finished() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO cafmq.finished_counts (day, channel_name, state, tasks)
    SELECT c.day, c.channel_name, c.state, sum(c.n)
      FROM (SELECT (o.finished_at AT TIME ZONE 'UTC')::date, o.channel_name,
                   o.state, -1
              FROM was o
            UNION ALL
            SELECT (n.finished_at AT TIME ZONE 'UTC')::date, n.channel_name,
                   n.state, 1
              FROM now_is n) AS c (day, channel_name, state, n)
     GROUP BY 1, 2, 3
    HAVING sum(c.n) <> 0;
  ELSE
    INSERT INTO cafmq.finished_counts (day, channel_name, state, tasks)
    SELECT (c.finished_at AT TIME ZONE 'UTC')::date, c.channel_name, c.state,
           -count(*)
      FROM removed c
     GROUP BY 1, 2, 3;
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION cafmq.expire_reservation(p_id uuid) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_parent boolean;
BEGIN
  DELETE FROM cafmq.tasks_live t
   WHERE t.id = (SELECT x.id FROM cafmq.tasks_live x
                  WHERE x.id = p_id AND x.state = 'uncommitted'
                    AND x.commit_deadline <= now()
                  FOR UPDATE SKIP LOCKED)
  RETURNING t.has_children INTO v_parent;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF v_parent THEN
    PERFORM cafmq.release_children(ARRAY[p_id]);
  END IF;
  RETURN true;
END
$$;

CREATE FUNCTION cafmq.expire_reservations(p_limit integer) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_count bigint;
  v_parents uuid[];
BEGIN
  WITH gone AS (
    DELETE FROM cafmq.tasks_live t
     WHERE t.id IN (SELECT x.id FROM cafmq.tasks_live x
                     WHERE x.state = 'uncommitted' AND x.commit_deadline <= now()
                     ORDER BY x.commit_deadline LIMIT p_limit
                     FOR UPDATE SKIP LOCKED)
    RETURNING t.id, t.has_children)
  SELECT count(*), array_agg(g.id) FILTER (WHERE g.has_children)
    INTO v_count, v_parents FROM gone g;
  IF v_parents IS NOT NULL THEN
    PERFORM cafmq.release_children(v_parents);
  END IF;
  RETURN v_count;
END
$$;

CREATE FUNCTION cafmq.fail(p_ids uuid[], p_attempts integer[], p_errors text[], p_retryable boolean[], p_workers text[] DEFAULT NULL::text[]) RETURNS TABLE(id uuid, state cafmq.task_state, run_at timestamp with time zone)
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

CREATE SEQUENCE cafmq.task_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

CREATE TABLE cafmq.tasks_history (
    id uuid NOT NULL,
    seq bigint NOT NULL,
    name text NOT NULL,
    channel_name text NOT NULL COLLATE pg_catalog."C",
    channel_args text NOT NULL COLLATE pg_catalog."C",
    state cafmq.task_state NOT NULL,
    ordered boolean NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer NOT NULL,
    run_at timestamp with time zone NOT NULL,
    backoff interval NOT NULL,
    backoff_cap interval NOT NULL,
    commit_deadline timestamp with time zone,
    timeout interval,
    deadline timestamp with time zone,
    unique_key text,
    cancel_requested boolean DEFAULT false NOT NULL,
    node text,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    lost_attempts integer DEFAULT 0 NOT NULL,
    backoff_jitter text,
    attempt_base integer DEFAULT 0 NOT NULL,
    priority smallint DEFAULT 0 NOT NULL,
    result jsonb,
    payload_json jsonb,
    payload_bytes bytea,
    earlier_attempts jsonb,
    worker text,
    parents_left integer,
    on_parent_failure text,
    has_children boolean DEFAULT false NOT NULL,
    workflow_id uuid,
    CONSTRAINT tasks_attempts CHECK (((max_attempts >= 1) AND (attempt >= 0))),
    CONSTRAINT tasks_backoff CHECK (((backoff >= '00:00:00'::interval) AND (backoff_cap >= backoff))),
    CONSTRAINT tasks_backoff_jitter CHECK ((backoff_jitter = ANY (ARRAY['full'::text, 'equal'::text]))),
    CONSTRAINT tasks_channel_args_length CHECK ((octet_length(channel_args) <= 4096)),
    CONSTRAINT tasks_channel_name_length CHECK ((octet_length(channel_name) <= 255)),
    CONSTRAINT tasks_history_finished CHECK (((state = ANY (ARRAY['completed'::cafmq.task_state, 'failed'::cafmq.task_state, 'cancelled'::cafmq.task_state])) AND (finished_at IS NOT NULL))),
    CONSTRAINT tasks_name_length CHECK (((octet_length(name) >= 1) AND (octet_length(name) <= 255))),
    CONSTRAINT tasks_priority CHECK (((priority >= 0) AND ((priority = 0) OR (NOT ordered)))),
    CONSTRAINT tasks_timeout CHECK ((timeout > '00:00:00'::interval)),
    CONSTRAINT tasks_two_phase CHECK (((state = 'uncommitted'::cafmq.task_state) = (commit_deadline IS NOT NULL))),
    CONSTRAINT tasks_unique_key_length CHECK ((octet_length(unique_key) <= 1024))
)
PARTITION BY RANGE (finished_at);

CREATE TABLE cafmq.tasks_live (
    id uuid NOT NULL,
    seq bigint DEFAULT nextval('cafmq.task_seq'::regclass) NOT NULL,
    name text NOT NULL,
    channel_name text NOT NULL COLLATE pg_catalog."C",
    channel_args text NOT NULL COLLATE pg_catalog."C",
    state cafmq.task_state DEFAULT 'pending'::cafmq.task_state NOT NULL,
    ordered boolean DEFAULT false NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    run_at timestamp with time zone DEFAULT now() NOT NULL,
    backoff interval DEFAULT '00:00:01'::interval NOT NULL,
    backoff_cap interval DEFAULT '01:00:00'::interval NOT NULL,
    commit_deadline timestamp with time zone,
    timeout interval,
    deadline timestamp with time zone,
    unique_key text,
    cancel_requested boolean DEFAULT false NOT NULL,
    node text,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    lost_attempts integer DEFAULT 0 NOT NULL,
    backoff_jitter text,
    attempt_base integer DEFAULT 0 NOT NULL,
    priority smallint DEFAULT 0 NOT NULL,
    result jsonb,
    payload_json jsonb,
    payload_bytes bytea,
    earlier_attempts jsonb,
    worker text,
    parents_left integer,
    on_parent_failure text,
    has_children boolean DEFAULT false NOT NULL,
    workflow_id uuid,
    CONSTRAINT tasks_attempts CHECK (((max_attempts >= 1) AND (attempt >= 0))),
    CONSTRAINT tasks_backoff CHECK (((backoff >= '00:00:00'::interval) AND (backoff_cap >= backoff))),
    CONSTRAINT tasks_backoff_jitter CHECK ((backoff_jitter = ANY (ARRAY['full'::text, 'equal'::text]))),
    CONSTRAINT tasks_channel_args_length CHECK ((octet_length(channel_args) <= 4096)),
    CONSTRAINT tasks_channel_name_length CHECK ((octet_length(channel_name) <= 255)),
    CONSTRAINT tasks_live_unfinished CHECK ((state = ANY (ARRAY['uncommitted'::cafmq.task_state, 'waiting'::cafmq.task_state, 'pending'::cafmq.task_state, 'running'::cafmq.task_state]))),
    CONSTRAINT tasks_name_length CHECK (((octet_length(name) >= 1) AND (octet_length(name) <= 255))),
    CONSTRAINT tasks_parents CHECK ((((parents_left IS NULL) = (on_parent_failure IS NULL)) AND (parents_left >= 0) AND (on_parent_failure = ANY (ARRAY['cancel'::text, 'run'::text])))),
    CONSTRAINT tasks_priority CHECK (((priority >= 0) AND ((priority = 0) OR (NOT ordered)))),
    CONSTRAINT tasks_timeout CHECK ((timeout > '00:00:00'::interval)),
    CONSTRAINT tasks_two_phase CHECK (((state = 'uncommitted'::cafmq.task_state) = (commit_deadline IS NOT NULL))),
    CONSTRAINT tasks_unique_key_length CHECK ((octet_length(unique_key) <= 1024)),
    CONSTRAINT tasks_waiting CHECK (((state <> 'waiting'::cafmq.task_state) OR (parents_left > 0)))
)
WITH (fillfactor='80', autovacuum_vacuum_scale_factor='0', autovacuum_vacuum_threshold='1000', autovacuum_vacuum_cost_delay='0', autovacuum_analyze_scale_factor='0.02');

CREATE FUNCTION cafmq.finished_row(t cafmq.tasks_live, p_state cafmq.task_state, p_last_error text, p_result jsonb, p_lost_attempts integer, p_worker text DEFAULT NULL::text) RETURNS SETOF cafmq.tasks_history
    LANGUAGE sql STABLE
    AS $$
  SELECT t.id, t.seq, t.name, t.channel_name, t.channel_args, p_state,
         t.ordered, t.attempt, t.max_attempts, t.run_at, t.backoff,
         t.backoff_cap, NULL::timestamptz, t.timeout, t.deadline,
         t.unique_key, t.cancel_requested OR p_state = 'cancelled', t.node,
         coalesce(p_last_error, t.last_error), t.created_at, t.started_at,
         now(), p_lost_attempts, t.backoff_jitter, t.attempt_base,
         t.priority, coalesce(p_result, t.result), t.payload_json,
         t.payload_bytes, t.earlier_attempts, p_worker, t.parents_left,
         t.on_parent_failure, t.has_children, t.workflow_id
$$;

CREATE FUNCTION cafmq.fire_schedule(p_name text, p_ticks timestamp without time zone[], p_next timestamp without time zone, p_missed bigint) RETURNS integer
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION cafmq.hand_back_attempts(p_ids uuid[], p_attempts integer[]) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_count integer;
  v_wake text[];
BEGIN
  WITH h AS (
    UPDATE cafmq.tasks_live t SET run_at = now()
      FROM unnest(p_ids, p_attempts) AS f (id, attempt)
     WHERE t.id = f.id AND t.attempt = f.attempt
       AND t.state::text = 'running'
    RETURNING t.channel_name)
  SELECT count(*), array_agg(DISTINCT h.channel_name) INTO v_count, v_wake
    FROM h;
  PERFORM cafmq.notify_ready(v_wake);
  RETURN v_count;
END
$$;

CREATE FUNCTION cafmq.hand_back_leftovers(p_node text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(cafmq.session_key(p_node)) THEN
    RETURN -1;
  END IF;
  RETURN cafmq.hand_back_session(p_node);
END
$$;

CREATE FUNCTION cafmq.hand_back_session(p_node text) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_started uuid[];
  v_count integer;
  v_wake text[];
BEGIN
  SELECT s.started INTO v_started FROM cafmq.sessions s WHERE s.node = p_node;
  v_started := coalesce(v_started, '{}');
  WITH h AS (
    UPDATE cafmq.tasks_live t
       SET run_at = now(),
           max_attempts = t.max_attempts
                          + CASE WHEN t.id = ANY (v_started)
                                   OR t.lost_attempts > 0 THEN 0
                                 ELSE 1 END
     WHERE t.state = 'running' AND t.node = p_node
    RETURNING t.channel_name)
  SELECT count(*), array_agg(DISTINCT h.channel_name) INTO v_count, v_wake
    FROM h;
  DELETE FROM cafmq.sessions s WHERE s.node = p_node;
  PERFORM cafmq.notify_ready(v_wake);
  RETURN v_count;
END
$$;

CREATE FUNCTION cafmq.keep_alive(p_ids uuid[], p_attempts integer[], p_lease interval) RETURNS TABLE(id uuid, cancel_requested boolean)
    LANGUAGE sql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
  WITH owned AS (
    SELECT t.id, t.attempt, t.cancel_requested
      FROM cafmq.tasks_live t, unnest(p_ids, p_attempts) AS f (id, attempt)
     WHERE t.id = f.id AND t.attempt = f.attempt
       AND t.state::text = 'running'),
  free AS (
    SELECT t.id FROM cafmq.tasks_live t
     WHERE t.id IN (SELECT o.id FROM owned o) AND t.state::text = 'running'
     FOR UPDATE SKIP LOCKED),
  renewed AS (
    UPDATE cafmq.tasks_live t SET run_at = greatest(t.run_at, now() + p_lease)
      FROM free, owned o
     WHERE t.id = free.id AND o.id = free.id AND t.attempt = o.attempt
       AND t.state::text = 'running'
    RETURNING t.id, t.cancel_requested)
  SELECT r.id, r.cancel_requested FROM renewed r
  UNION ALL
  SELECT o.id, o.cancel_requested FROM owned o
   WHERE o.id NOT IN (SELECT free.id FROM free)
$$;

CREATE FUNCTION cafmq.link_parents(p_specs cafmq.spawn_spec[], p_created uuid[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_children uuid[];
  v_earlier uuid[];
  v_live uuid[];
  v_locked boolean := false;
BEGIN
  v_children := ARRAY(SELECT s.id FROM unnest(p_specs) s
                       WHERE cardinality(s.parents) > 0
                         AND (p_created IS NULL
                              OR s.id IN (SELECT unnest(p_created))));
  WITH named AS (
    SELECT DISTINCT c.id AS child, coalesce(h.id, p.parent) AS parent
      FROM unnest(p_specs) c, unnest(c.parents) AS p (parent)
      LEFT JOIN (SELECT q.id AS spec, t.id FROM unnest(p_specs) q
                   JOIN cafmq.tasks_live t ON t.unique_key = q.unique_key
                  WHERE p_created IS NOT NULL
                    AND q.id NOT IN (SELECT unnest(p_created))
                    AND t.state IN ('uncommitted', 'waiting', 'pending',
                                    'running')) h ON h.spec = p.parent
     WHERE c.id IN (SELECT unnest(v_children))),
  dealt AS (
    SELECT n.child, n.parent,
           ((row_number() OVER (PARTITION BY n.child ORDER BY n.parent) - 1)
            % cafmq.child_slots(count(*) OVER (PARTITION BY n.child)))::smallint
             AS slot
      FROM named n),
  edges AS (
    INSERT INTO cafmq.task_parents (child, parent, slot)
    SELECT d.child, d.parent, d.slot FROM dealt d
    RETURNING child, slot)
  INSERT INTO cafmq.child_waits (child, slot, parents_left)
  SELECT e.child, e.slot, count(*) FROM edges e GROUP BY 1, 2;
  IF p_created IS NOT NULL AND cardinality(p_created) < cardinality(p_specs)
  THEN
    -- A parent stood for by a holder may be named twice now.
    UPDATE cafmq.tasks_live t
       SET parents_left = (SELECT count(*) FROM cafmq.child_waits w
                            WHERE w.child = t.id)
     WHERE t.id = ANY (v_children);
  END IF;
  v_earlier := ARRAY(SELECT DISTINCT e.parent FROM cafmq.task_parents e
                      WHERE e.child IN (SELECT unnest(v_children))
                        AND CASE WHEN p_created IS NULL
                              THEN e.parent NOT IN (SELECT s.id
                                                      FROM unnest(p_specs) s)
                              ELSE e.parent NOT IN (SELECT unnest(p_created))
                            END);
  IF cardinality(v_earlier) = 0 THEN
    RETURN;
  END IF;
  -- The live ones are locked in id order, without waiting: a completion of
  -- several of them locks them in the order its plan meets them, so a wait
  -- here could close a cycle with it (a deadlock). A lock held elsewhere
  -- rolls this attempt back, which lets go of the locks it took, and after
  -- a short pause it starts again; after about 2.5 s of that it waits.
  FOR v_try IN 1 .. 50 LOOP
    BEGIN
      v_live := ARRAY(SELECT t.id FROM cafmq.tasks_live t
                       WHERE t.id = ANY (v_earlier)
                       ORDER BY t.id FOR NO KEY UPDATE NOWAIT);
      v_locked := true;
      EXIT;
    EXCEPTION WHEN lock_not_available THEN
      PERFORM pg_sleep(0.002 * v_try);
    END;
  END LOOP;
  IF NOT v_locked THEN
    v_live := ARRAY(SELECT t.id FROM cafmq.tasks_live t
                     WHERE t.id = ANY (v_earlier)
                     ORDER BY t.id FOR NO KEY UPDATE);
  END IF;
  UPDATE cafmq.tasks_live t SET has_children = true
   WHERE t.id = ANY (v_live) AND NOT t.has_children;
  IF cardinality(v_live) < cardinality(v_earlier) THEN
    PERFORM cafmq.release_children(
      ARRAY(SELECT x FROM unnest(v_earlier) x
             WHERE x NOT IN (SELECT unnest(v_live))),
      v_children);
  END IF;
END
$$;

CREATE FUNCTION cafmq.live_index_upkeep(p_min_bytes bigint) RETURNS TABLE(index_name text, action text)
    LANGUAGE sql STABLE
    AS $_$
  SELECT c.relname::text,
         CASE WHEN i.indisvalid THEN 'rebuild' ELSE 'drop' END
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_class t ON t.oid = i.indrelid
   WHERE i.indrelid = 'cafmq.tasks_live'::regclass
     AND CASE WHEN i.indisvalid
              THEN pg_relation_size(c.oid) > p_min_bytes
                   AND pg_relation_size(c.oid)
                       > 8 * 64 * greatest(t.reltuples, 0)::bigint
              ELSE c.relname ~ '_cc(new|old)[0-9]*$'
         END
   ORDER BY pg_relation_size(c.oid) DESC
$_$;

CREATE FUNCTION cafmq.live_vacuum_due(p_min_dead_rows bigint) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
  SELECT pg_stat_get_dead_tuples(c.oid) >= p_min_dead_rows
         AND coalesce(
               cafmq.oldest_snapshot()
                 < clock_timestamp()
                   - greatest(pg_stat_get_last_vacuum_time(c.oid),
                              pg_stat_get_last_autovacuum_time(c.oid)),
               true)
    FROM (SELECT 'cafmq.tasks_live'::regclass::oid) AS c (oid)
$$;

CREATE FUNCTION cafmq.notify_ready(p_channels text[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM pg_notify('cafmq_ready', c)
    FROM (SELECT DISTINCT unnest(p_channels) AS c) d;
END
$$;

CREATE FUNCTION cafmq.notify_spawned(p_specs cafmq.spawn_spec[], p_created uuid[] DEFAULT NULL::uuid[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM pg_notify('cafmq_ready',
                    CASE WHEN count(*) <= 32 AND bool_and(c.by_id)
                         THEN c.channel_name || chr(31)
                              || string_agg(c.id::text, ',')
                         ELSE c.channel_name END)
     FROM (SELECT s.channel_name, s.id,
                  NOT s.ordered AND coalesce(s.priority, 0) = 0
                  AND coalesce(s.run_at_us / 1e6 <= extract(epoch FROM now()),
                               coalesce(s.delay_us, 0) <= 0) AS by_id
             FROM unnest(p_specs) s
            WHERE s.commit_us IS NULL
              AND coalesce(cardinality(s.parents), 0) = 0
              AND (p_created IS NULL OR s.id = ANY (p_created))
              AND s.id::text IS DISTINCT FROM
                  nullif(current_setting('cafmq.dispatching', true), '')) c
    GROUP BY c.channel_name;
END
$$;

CREATE FUNCTION cafmq.oldest_snapshot() RETURNS interval
    LANGUAGE sql STABLE
    AS $$
  SELECT clock_timestamp() - min(s.since)
    FROM (SELECT a.xact_start
            FROM pg_stat_activity a
           WHERE a.datname = current_database()
             AND a.pid <> pg_backend_pid()
             AND a.backend_type = 'client backend'
             AND (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
             AND a.query !~* '^\s*(vacuum|create index concurrently|reindex)'
          UNION ALL
          SELECT p.prepared
            FROM pg_prepared_xacts p
           WHERE p.database = current_database()) AS s (since)
$$;

CREATE FUNCTION cafmq.pause(p_kind text, p_value text) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF p_kind IS NULL OR p_kind NOT IN ('channel', 'task') THEN
    RAISE EXCEPTION 'cafmq.pause: kind must be channel or task, got %', p_kind
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_value IS NULL OR octet_length(p_value) > 255 THEN
    RAISE EXCEPTION 'cafmq.pause: the % name must be at most 255 bytes (not NULL)',
      p_kind USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO cafmq.pauses (kind, value) VALUES (p_kind, p_value)
    ON CONFLICT DO NOTHING;
  RETURN FOUND;
END $$;

CREATE FUNCTION cafmq.prune(p_retention interval, p_limit integer) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_cutoff timestamptz := now() - p_retention;
  v_count bigint := 0;
  v_rows bigint;
  v_part record;
  v_lock_timeout text := current_setting('lock_timeout');
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended('cafmq.prune', 7305)) THEN
    RETURN -1;
  END IF;
  -- A drop waits for every transaction that uses the history: at most a
  -- second, with the finishing statements queued behind it.
  PERFORM set_config('lock_timeout', '1s', true);
  FOR v_part IN
    SELECT c.oid::regclass AS part,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid),
                         'FROM \(''([^'']+)''\)'))[1]::timestamptz AS lower,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid),
                         'TO \(''([^'']+)''\)'))[1]::timestamptz AS upper
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'cafmq.tasks_history'::regclass
       AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
     ORDER BY 2
  LOOP
    EXIT WHEN v_part.upper > v_cutoff;
    BEGIN
      EXECUTE format('DROP TABLE %s', v_part.part);
      -- Its tasks, as counted when they moved in: no scan of the rows.
      WITH dropped AS (
        DELETE FROM cafmq.finished_counts f
         WHERE f.day >= (v_part.lower AT TIME ZONE 'UTC')::date
           AND f.day < (v_part.upper AT TIME ZONE 'UTC')::date
        RETURNING f.tasks)
      SELECT coalesce(sum(d.tasks), 0) INTO v_rows FROM dropped d;
      v_count := v_count + v_rows;
    EXCEPTION WHEN lock_not_available THEN
      NULL;
    END;
  END LOOP;
  PERFORM set_config('lock_timeout', v_lock_timeout, true);
  -- A statement on the partition does not fire the history's counting
  -- triggers: it subtracts what it deletes itself.
  WITH removed AS (
    DELETE FROM cafmq.tasks_history_default d
     WHERE (d.id, d.finished_at) IN (
       SELECT x.id, x.finished_at FROM cafmq.tasks_history_default x
        WHERE x.finished_at < v_cutoff
        ORDER BY x.finished_at LIMIT p_limit)
    RETURNING d.finished_at, d.channel_name, d.state),
  counted AS (
    INSERT INTO cafmq.finished_counts
    SELECT (r.finished_at AT TIME ZONE 'UTC')::date, r.channel_name, r.state,
           -count(*)
      FROM removed r
     GROUP BY 1, 2, 3)
  SELECT count(*) INTO v_rows FROM removed;
  v_count := v_count + v_rows;
  -- One row per key again: the counts that finishing statements added since
  -- the last call, folded (they only insert, so nothing waits for this).
  WITH folded AS (DELETE FROM cafmq.finished_counts RETURNING *)
  INSERT INTO cafmq.finished_counts
  SELECT f.day, f.channel_name, f.state, sum(f.tasks)
    FROM folded f
   GROUP BY 1, 2, 3
  HAVING sum(f.tasks) <> 0;
  -- The ends of parents, kept for their children: those older than the
  -- retention whose children have all ended go, with their edges.
  WITH gone AS (
    DELETE FROM cafmq.parent_results r
     WHERE r.id IN (
       SELECT x.id FROM cafmq.parent_results x
        WHERE x.finished_at < v_cutoff
          AND NOT EXISTS (SELECT 1 FROM cafmq.task_parents e
                            JOIN cafmq.tasks_live c ON c.id = e.child
                           WHERE e.parent = x.id)
        ORDER BY x.finished_at LIMIT p_limit)
    RETURNING r.id)
  DELETE FROM cafmq.task_parents e USING gone g WHERE e.parent = g.id;
  -- Slots of children that left without being ready (an expired or
  -- cleared reservation).
  DELETE FROM cafmq.child_waits w
   WHERE NOT EXISTS (SELECT 1 FROM cafmq.tasks_live t WHERE t.id = w.child);
  PERFORM cafmq.add_history_partitions(2);
  DELETE FROM cafmq.watches w
   WHERE w.backend_pid NOT IN (SELECT a.pid FROM pg_stat_activity a
                                WHERE a.pid IS NOT NULL);
  RETURN v_count;
END
$$;

CREATE FUNCTION cafmq.publish_status(p_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM cafmq.watches) THEN
    RETURN;
  END IF;
  PERFORM pg_notify('cafmq_status', t.id || ' ' || t.state || ' ' || t.attempt)
     FROM (SELECT DISTINCT w.task_id FROM cafmq.watches w
            WHERE w.task_id = ANY (p_ids)) w
     JOIN cafmq.tasks t ON t.id = w.task_id;
END
$$;

CREATE FUNCTION cafmq.record_started(p_node text, p_ids uuid[]) RETURNS void
    LANGUAGE sql
    AS $$
  UPDATE cafmq.sessions SET started = p_ids
   WHERE node = p_node AND p_ids IS NOT NULL
$$;

CREATE FUNCTION cafmq.record_workers(p_ids uuid[], p_attempts integer[], p_workers text[]) RETURNS void
    LANGUAGE sql
    AS $$
  UPDATE cafmq.tasks_live t SET worker = w.worker
    FROM unnest(p_ids, p_attempts, p_workers) AS w (id, attempt, worker)
   WHERE t.id = w.id AND t.attempt = w.attempt
     AND t.id IN (SELECT l.id FROM cafmq.tasks_live l
                   WHERE l.id = ANY (p_ids) AND l.state::text = 'running'
                   ORDER BY l.id
                     FOR UPDATE SKIP LOCKED)
$$;

CREATE FUNCTION cafmq.refuse_finished_ids(p_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_id uuid;
BEGIN
  SELECT h.id INTO v_id FROM cafmq.tasks_history h
   WHERE h.id = ANY (p_ids)
     AND NOT (h.created_at = now() AND h.state = 'cancelled'
              AND h.started_at IS NULL)
   LIMIT 1;
  IF FOUND THEN
    RAISE unique_violation USING
      MESSAGE = 'duplicate key value violates unique constraint "tasks_pkey"',
      DETAIL = format('Key (id)=(%s) already exists.', v_id),
      SCHEMA = 'cafmq', TABLE = 'tasks_history', CONSTRAINT = 'tasks_pkey';
  END IF;
END
$$;

CREATE FUNCTION cafmq.register_session(p_node text) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF NOT pg_try_advisory_lock(cafmq.session_key(p_node)) THEN
    RETURN false;
  END IF;
  INSERT INTO cafmq.sessions AS s (node, incarnation)
  VALUES (p_node, pg_postmaster_start_time())
  ON CONFLICT (node) DO UPDATE
    SET incarnation = excluded.incarnation, suspected_at = NULL,
        registered_at = now();
  RETURN true;
END
$$;

CREATE FUNCTION cafmq.release(p_ids uuid[], p_attempts integer[]) RETURNS SETOF uuid
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
BEGIN
  WITH r AS (
    UPDATE cafmq.tasks_live t
       SET state = 'pending', attempt = t.attempt - 1, run_at = now(),
           node = NULL, lost_attempts = 0
      FROM unnest(p_ids, p_attempts) AS f (id, attempt)
     WHERE t.id = f.id AND t.attempt = f.attempt
       AND t.state::text = 'running'
    RETURNING t.id, t.channel_name)
  SELECT array_agg(r.id), array_agg(r.channel_name) INTO v_done, v_wake FROM r;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;

CREATE FUNCTION cafmq.release_children(p_parents uuid[], p_only uuid[] DEFAULT NULL::uuid[]) RETURNS void
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

CREATE FUNCTION cafmq.resume(p_kind text, p_value text) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
BEGIN
  DELETE FROM cafmq.pauses p WHERE p.kind = p_kind AND p.value = p_value;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF p_kind = 'channel' THEN
    PERFORM cafmq.notify_ready(ARRAY[p_value]);
  ELSE
    PERFORM cafmq.notify_ready(ARRAY(
      SELECT DISTINCT t.channel_name FROM cafmq.tasks_live t
       WHERE t.state = 'pending' AND t.name = p_value));
  END IF;
  RETURN true;
END $$;

CREATE FUNCTION cafmq.retry(p_ids uuid[]) RETURNS TABLE(id uuid, outcome text)
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

CREATE FUNCTION cafmq.retry_delay(p_backoff interval, p_cap interval, p_attempt integer) RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT CASE WHEN p_attempt > 40 THEN p_cap
              ELSE least(p_cap, p_backoff * power(2, greatest(p_attempt, 1) - 1))
         END
$$;

CREATE FUNCTION cafmq.retry_delay(p_backoff interval, p_cap interval, p_attempt integer, p_jitter text, p_draw double precision) RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT CASE p_jitter
           WHEN 'full' THEN d * p_draw
           WHEN 'equal' THEN d / 2 + d / 2 * p_draw
           ELSE d
         END
    FROM cafmq.retry_delay(p_backoff, p_cap, p_attempt) AS d
$$;

CREATE FUNCTION cafmq.revive_children(p_parents uuid[]) RETURNS uuid[]
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_task cafmq.tasks_live;
  v_revived uuid[] := '{}';
  v_parents uuid[] := '{}';
  v_id uuid;
BEGIN
  FOR v_id IN
    SELECT DISTINCT e.child FROM cafmq.task_parents e
      JOIN cafmq.tasks_live c ON c.id = e.child
     WHERE e.parent = ANY (p_parents) AND c.state IN ('waiting', 'uncommitted')
     ORDER BY 1
  LOOP
    UPDATE cafmq.tasks_live t SET parents_left = cafmq.wait_again(v_id)
     WHERE t.id = v_id;
  END LOOP;
  FOR v_id IN
    SELECT DISTINCT h.id
      FROM cafmq.task_parents e
      JOIN cafmq.tasks_history h ON h.id = e.child
     WHERE e.parent = ANY (p_parents) AND h.state = 'cancelled'
       AND h.last_error LIKE 'parent %'
       AND NOT EXISTS (
         SELECT 1 FROM cafmq.task_parents o
           JOIN cafmq.parent_results r ON r.id = o.parent
          WHERE o.child = h.id AND r.state <> 'completed'
            AND NOT EXISTS (SELECT 1 FROM cafmq.tasks_live l
                             WHERE l.id = o.parent))
     ORDER BY h.id
  LOOP
    DELETE FROM cafmq.tasks_history t WHERE t.id = v_id
    RETURNING t.* INTO v_task;
    CONTINUE WHEN NOT FOUND;
    v_task.state := 'waiting';
    v_task.parents_left := cafmq.wait_again(v_id);
    v_task.finished_at := NULL;
    v_task.cancel_requested := false;
    v_task.last_error := NULL;
    v_task.worker := NULL;
    INSERT INTO cafmq.tasks_live VALUES (v_task.*);
    v_revived := v_revived || v_id;
    IF v_task.has_children THEN
      v_parents := v_parents || v_id;
    END IF;
  END LOOP;
  IF cardinality(v_parents) > 0 THEN
    v_revived := v_revived || cafmq.revive_children(v_parents);
  END IF;
  PERFORM cafmq.publish_status(v_revived);
  RETURN v_revived;
END
$$;

CREATE FUNCTION cafmq.session_key(p_node text) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT hashtextextended('cafmq.session' || chr(31) || p_node, 7305)
$$;

CREATE FUNCTION cafmq.set_channel_limit(p_channel text, p_max_running integer, p_rate_limit integer, p_rate_period interval) RETURNS void
    LANGUAGE plpgsql
    AS $$
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

CREATE FUNCTION cafmq.spawn(p_tasks json) RETURNS TABLE(id uuid, created boolean)
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_specs cafmq.spawn_spec[];
  v_created uuid[];
  v_parents uuid[];
BEGIN
  v_specs := ARRAY(SELECT x FROM json_populate_recordset(NULL::cafmq.spawn_spec, p_tasks) x);
  IF EXISTS (SELECT 1 FROM unnest(v_specs) s WHERE cardinality(s.parents) > 0)
  THEN
    -- Some wait for parents: refused before anything is written where a
    -- parent is unknown; the parents in this call are marked as such.
    v_parents := cafmq.check_parents(v_specs);
  END IF;
  PERFORM pg_advisory_xact_lock(k)
    FROM (SELECT DISTINCT cafmq.channel_key(s.channel_name, s.channel_args) AS k
            FROM unnest(v_specs) s WHERE s.ordered ORDER BY 1) keys;
  IF NOT EXISTS (SELECT 1 FROM unnest(v_specs) s WHERE s.unique_key IS NOT NULL)
  THEN
    -- No unique keys (the usual case): nothing can conflict, so plain
    -- inserts (no speculative insertion, no join of created rows) straight
    -- from the array, in its order.
    INSERT INTO cafmq.tasks_live AS t
      (id, seq, name, channel_name, channel_args, state, ordered, max_attempts,
       run_at, backoff, backoff_cap, backoff_jitter, commit_deadline, timeout,
       deadline, unique_key, priority, payload_json, payload_bytes,
       parents_left, on_parent_failure, has_children, workflow_id)
    SELECT o.id, nextval('cafmq.task_seq'), o.name, o.channel_name,
           o.channel_args,
           CASE WHEN o.commit_us IS NOT NULL THEN 'uncommitted'
                WHEN cardinality(o.parents) > 0 THEN 'waiting'
                ELSE 'pending' END::cafmq.task_state,
           o.ordered, o.max_attempts,
           coalesce(to_timestamp(o.run_at_us / 1e6),
                    now() + make_interval(secs => coalesce(o.delay_us, 0) / 1e6)),
           make_interval(secs => o.backoff_us / 1e6),
           make_interval(secs => o.backoff_cap_us / 1e6), o.jitter,
           now() + make_interval(secs => o.commit_us / 1e6),
           make_interval(secs => o.timeout_us / 1e6),
           to_timestamp(o.deadline_us / 1e6),
           NULL, coalesce(o.priority, 0), o.json::jsonb,
           decode(o.bytes, 'base64'),
           CASE WHEN cardinality(o.parents) > 0
                THEN cafmq.child_slots(
                       (SELECT count(DISTINCT p) FROM unnest(o.parents) p)) END,
           CASE WHEN cardinality(o.parents) > 0
                THEN coalesce(o.on_parent_failure, 'cancel') END,
           o.id IN (SELECT unnest(v_parents)), o.workflow_id
      FROM unnest(v_specs) WITH ORDINALITY AS o
     ORDER BY o.ordinality;
    IF v_parents IS NOT NULL THEN
      PERFORM cafmq.link_parents(v_specs, NULL);
    END IF;
    PERFORM cafmq.notify_spawned(v_specs);
    RETURN QUERY SELECT s.id, true FROM unnest(v_specs) WITH ORDINALITY AS s
                  ORDER BY s.ordinality;
    RETURN;
  END IF;
  WITH s AS (
    SELECT * FROM unnest(v_specs) WITH ORDINALITY AS u
  ), ins AS (
    INSERT INTO cafmq.tasks_live AS t
      (id, seq, name, channel_name, channel_args, state, ordered, max_attempts,
       run_at, backoff, backoff_cap, backoff_jitter, commit_deadline, timeout,
       deadline, unique_key, priority, payload_json, payload_bytes,
       parents_left, on_parent_failure, has_children, workflow_id)
    SELECT o.id, nextval('cafmq.task_seq'), o.name, o.channel_name,
           o.channel_args,
           CASE WHEN o.commit_us IS NOT NULL THEN 'uncommitted'
                WHEN cardinality(o.parents) > 0 THEN 'waiting'
                ELSE 'pending' END::cafmq.task_state,
           o.ordered, o.max_attempts,
           coalesce(to_timestamp(o.run_at_us / 1e6),
                    now() + make_interval(secs => coalesce(o.delay_us, 0) / 1e6)),
           make_interval(secs => o.backoff_us / 1e6),
           make_interval(secs => o.backoff_cap_us / 1e6), o.jitter,
           now() + make_interval(secs => o.commit_us / 1e6),
           make_interval(secs => o.timeout_us / 1e6),
           to_timestamp(o.deadline_us / 1e6),
           o.unique_key, coalesce(o.priority, 0), o.json::jsonb,
           decode(o.bytes, 'base64'),
           CASE WHEN cardinality(o.parents) > 0
                THEN cafmq.child_slots(
                       (SELECT count(DISTINCT p) FROM unnest(o.parents) p)) END,
           CASE WHEN cardinality(o.parents) > 0
                THEN coalesce(o.on_parent_failure, 'cancel') END,
           o.id IN (SELECT unnest(v_parents)), o.workflow_id
      FROM (SELECT * FROM s ORDER BY s.ordinality) o
    ON CONFLICT (unique_key)
      WHERE unique_key IS NOT NULL
        AND state IN ('uncommitted', 'waiting', 'pending', 'running') DO NOTHING
    RETURNING t.id
  )
  SELECT array_agg(ins.id) INTO v_created FROM ins;
  IF v_parents IS NOT NULL THEN
    PERFORM cafmq.link_parents(v_specs, coalesce(v_created, '{}'));
  END IF;
  PERFORM cafmq.notify_spawned(v_specs, coalesce(v_created, '{}'));
  IF cardinality(v_created) = cardinality(v_specs) THEN
    -- No duplicates (the usual case): every task was created.
    RETURN QUERY SELECT s.id, true FROM unnest(v_specs) WITH ORDINALITY AS s
                  ORDER BY s.ordinality;
    RETURN;
  END IF;
  RETURN QUERY
  SELECT coalesce(c.id, (SELECT t.id FROM cafmq.tasks_live t
                          WHERE t.unique_key = s.unique_key
                            AND t.state IN ('uncommitted', 'waiting', 'pending', 'running'))),
         c.id IS NOT NULL
    FROM unnest(v_specs) WITH ORDINALITY AS s
    LEFT JOIN unnest(v_created) AS c (id) ON c.id = s.id
   ORDER BY s.ordinality;
END
$$;

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
  IF spawn.id IS NOT NULL THEN
    PERFORM cafmq.refuse_finished_ids(ARRAY[spawn.id]);
  END IF;
  RETURN v_result;
END $$;

CREATE FUNCTION cafmq.spawn_claimed(p_specs json, p_node text, p_names text[], p_channels text[], p_paused text[], p_lease interval, p_max_lost integer) RETURNS TABLE(spawned_id uuid, created boolean, claimed cafmq.claim_row)
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_id uuid;
  v_created boolean;
BEGIN
  PERFORM set_config('cafmq.dispatching', p_specs->0->>'id', true);
  SELECT s.id, s.created INTO v_id, v_created FROM cafmq.spawn(p_specs) s;
  PERFORM cafmq.refuse_finished_ids(ARRAY[v_id]);
  PERFORM set_config('cafmq.dispatching', '', true);
  spawned_id := v_id;
  created := v_created;
  IF NOT v_created THEN
    RETURN NEXT;
    RETURN;
  END IF;
  FOR claimed IN
    SELECT * FROM cafmq.claim_ids(p_node, p_names, p_channels, p_paused,
                                  ARRAY[v_id], p_lease, p_max_lost)
  LOOP
    RETURN NEXT;
  END LOOP;
  PERFORM pg_notify('cafmq_ready', t.channel_name)
     FROM cafmq.tasks_live t
    WHERE t.id = v_id AND t.state = 'pending';
END
$$;

CREATE FUNCTION cafmq.take_over(p_node text, p_grace interval) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  v record;
  v_count integer := 0;
BEGIN
  FOR v IN
    SELECT s.node, s.suspected_at FROM cafmq.sessions s
     WHERE s.node <> p_node AND s.incarnation = pg_postmaster_start_time()
     ORDER BY s.node
  LOOP
    CONTINUE WHEN NOT pg_try_advisory_xact_lock(cafmq.session_key(v.node));
    IF v.suspected_at IS NULL THEN
      UPDATE cafmq.sessions SET suspected_at = now() WHERE node = v.node;
    ELSIF v.suspected_at <= now() - p_grace THEN
      v_count := v_count + cafmq.hand_back_session(v.node);
    END IF;
  END LOOP;
  DELETE FROM cafmq.sessions s
   WHERE s.incarnation <> pg_postmaster_start_time()
     AND NOT EXISTS (SELECT 1 FROM cafmq.tasks_live t
                      WHERE t.state = 'running' AND t.node = s.node)
     AND pg_try_advisory_xact_lock(cafmq.session_key(s.node));
  RETURN v_count;
END
$$;

CREATE FUNCTION cafmq.task_attempts(p_id uuid) RETURNS TABLE(attempt integer, started_at timestamp with time zone, ended_at timestamp with time zone, outcome text, error text, node text, worker text, retry_at timestamp with time zone)
    LANGUAGE sql STABLE
    AS $$
  SELECT a.attempt, a.started_at, a.ended_at, a.outcome, a.error, a.node,
         a.worker, a.retry_at
    FROM cafmq.tasks t,
         jsonb_to_recordset(coalesce(t.earlier_attempts, '[]'))
           AS a (attempt integer, started_at timestamptz,
                 ended_at timestamptz, outcome text, error text, node text,
                 worker text, retry_at timestamptz)
   WHERE t.id = p_id
  UNION ALL
  SELECT t.attempt, t.started_at, t.finished_at, t.state::text,
         CASE WHEN t.state IN ('failed', 'cancelled') THEN t.last_error END,
         t.node, t.worker, NULL
    FROM cafmq.tasks t
   WHERE t.id = p_id AND t.state IN ('running', 'completed', 'failed',
                                     'cancelled')
     AND t.started_at IS NOT NULL
     AND NOT cafmq.attempt_logged(t.earlier_attempts, t.attempt)
   ORDER BY 1
$$;

CREATE VIEW cafmq.tasks AS
 SELECT tasks_live.id,
    tasks_live.seq,
    tasks_live.name,
    tasks_live.channel_name,
    tasks_live.channel_args,
    tasks_live.state,
    tasks_live.ordered,
    tasks_live.attempt,
    tasks_live.max_attempts,
    tasks_live.run_at,
    tasks_live.backoff,
    tasks_live.backoff_cap,
    tasks_live.commit_deadline,
    tasks_live.timeout,
    tasks_live.deadline,
    tasks_live.unique_key,
    tasks_live.cancel_requested,
    tasks_live.node,
    tasks_live.last_error,
    tasks_live.created_at,
    tasks_live.started_at,
    tasks_live.finished_at,
    tasks_live.lost_attempts,
    tasks_live.backoff_jitter,
    tasks_live.attempt_base,
    tasks_live.priority,
    tasks_live.result,
    tasks_live.payload_json,
    tasks_live.payload_bytes,
    tasks_live.earlier_attempts,
    tasks_live.worker,
    tasks_live.parents_left,
    tasks_live.on_parent_failure,
    tasks_live.has_children,
    tasks_live.workflow_id
   FROM cafmq.tasks_live
UNION ALL
 SELECT tasks_history.id,
    tasks_history.seq,
    tasks_history.name,
    tasks_history.channel_name,
    tasks_history.channel_args,
    tasks_history.state,
    tasks_history.ordered,
    tasks_history.attempt,
    tasks_history.max_attempts,
    tasks_history.run_at,
    tasks_history.backoff,
    tasks_history.backoff_cap,
    tasks_history.commit_deadline,
    tasks_history.timeout,
    tasks_history.deadline,
    tasks_history.unique_key,
    tasks_history.cancel_requested,
    tasks_history.node,
    tasks_history.last_error,
    tasks_history.created_at,
    tasks_history.started_at,
    tasks_history.finished_at,
    tasks_history.lost_attempts,
    tasks_history.backoff_jitter,
    tasks_history.attempt_base,
    tasks_history.priority,
    tasks_history.result,
    tasks_history.payload_json,
    tasks_history.payload_bytes,
    tasks_history.earlier_attempts,
    tasks_history.worker,
    tasks_history.parents_left,
    tasks_history.on_parent_failure,
    tasks_history.has_children,
    tasks_history.workflow_id
   FROM cafmq.tasks_history;

CREATE FUNCTION cafmq.task_matches(t cafmq.tasks, p_states cafmq.task_state[], p_name text, p_channel text, p_older_us bigint, p_newer_us bigint) RETURNS boolean
    LANGUAGE sql STABLE
    AS $$
  SELECT (p_states IS NULL OR t.state = ANY (p_states))
     AND (p_name IS NULL OR t.name = p_name)
     AND (p_channel IS NULL OR t.channel_name = p_channel)
     AND (p_older_us IS NULL
          OR t.created_at <= now() - p_older_us * interval '1 microsecond')
     AND (p_newer_us IS NULL
          OR t.created_at >= now() - p_newer_us * interval '1 microsecond')
$$;

CREATE FUNCTION cafmq.time_ordered_uuid() RETURNS uuid
    LANGUAGE sql
    AS $$
  SELECT (lpad(to_hex(floor(extract(epoch FROM c) * 1000)::bigint), 12, '0')
          || '7'
          || lpad(to_hex((extract(microseconds FROM c)::bigint % 1000)
                         * 4096 / 1000), 3, '0')
          || substr(replace(gen_random_uuid()::text, '-', ''), 17, 16))::uuid
    FROM clock_timestamp() c
$$;

CREATE FUNCTION cafmq.wait_again(p_child uuid) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_live uuid[];
  v_slots integer;
BEGIN
  v_live := ARRAY(SELECT l.id FROM cafmq.tasks_live l
                   WHERE l.id IN (SELECT e.parent FROM cafmq.task_parents e
                                   WHERE e.child = p_child)
                   ORDER BY l.id FOR KEY SHARE);
  DELETE FROM cafmq.child_waits w WHERE w.child = p_child;
  INSERT INTO cafmq.child_waits (child, slot, parents_left)
  SELECT e.child, e.slot, count(*) FROM cafmq.task_parents e
   WHERE e.child = p_child AND e.parent = ANY (v_live)
   GROUP BY 1, 2;
  GET DIAGNOSTICS v_slots = ROW_COUNT;
  RETURN v_slots;
END
$$;

CREATE TABLE cafmq.channel_limits (
    channel_name text NOT NULL COLLATE pg_catalog."C",
    max_running integer,
    rate_limit integer,
    rate_period interval,
    recent_starts timestamp with time zone[] DEFAULT '{}'::timestamp with time zone[] NOT NULL,
    cursor_args text COLLATE pg_catalog."C",
    CONSTRAINT channel_limits_channel_name_check CHECK ((octet_length(channel_name) <= 255)),
    CONSTRAINT channel_limits_check CHECK (((rate_limit IS NULL) = (rate_period IS NULL))),
    CONSTRAINT channel_limits_check1 CHECK (((max_running IS NOT NULL) OR (rate_limit IS NOT NULL))),
    CONSTRAINT channel_limits_max_running_check CHECK ((max_running >= 1)),
    CONSTRAINT channel_limits_rate_limit_check CHECK (((rate_limit >= 1) AND (rate_limit <= 100000))),
    CONSTRAINT channel_limits_rate_period_check CHECK ((rate_period > '00:00:00'::interval))
);

CREATE TABLE cafmq.child_waits (
    child uuid NOT NULL,
    slot smallint NOT NULL,
    parents_left integer NOT NULL,
    CONSTRAINT child_waits_parents_left_check CHECK ((parents_left >= 0))
);

CREATE TABLE cafmq.finished_counts (
    day date NOT NULL,
    channel_name text NOT NULL,
    state cafmq.task_state NOT NULL,
    tasks bigint NOT NULL
);

CREATE TABLE cafmq.parent_results (
    id uuid NOT NULL,
    name text NOT NULL,
    state cafmq.task_state NOT NULL,
    result jsonb,
    last_error text,
    finished_at timestamp with time zone NOT NULL
);

CREATE TABLE cafmq.pauses (
    kind text NOT NULL,
    value text NOT NULL,
    paused_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT pauses_kind_check CHECK ((kind = ANY (ARRAY['channel'::text, 'task'::text])))
);

CREATE VIEW cafmq.queue_depth AS
 SELECT l.channel_name,
    l.state,
    count(*) AS tasks,
    count(*) FILTER (WHERE ((l.state = 'pending'::cafmq.task_state) AND (l.run_at <= now()))) AS ready,
        CASE
            WHEN (l.state = 'pending'::cafmq.task_state) THEN (now() - min(l.run_at) FILTER (WHERE (l.run_at <= now())))
            ELSE NULL::interval
        END AS oldest_pending_age
   FROM ( SELECT t.channel_name,
            t.state,
            t.run_at
           FROM cafmq.tasks_live t
          WHERE ((t.state = 'pending'::cafmq.task_state) AND (NOT t.ordered))
        UNION ALL
         SELECT t.channel_name,
            t.state,
            t.run_at
           FROM cafmq.tasks_live t
          WHERE (t.ordered AND (t.state = 'pending'::cafmq.task_state))
        UNION ALL
         SELECT t.channel_name,
            t.state,
            t.run_at
           FROM cafmq.tasks_live t
          WHERE (t.state = 'running'::cafmq.task_state)
        UNION ALL
         SELECT t.channel_name,
            t.state,
            t.run_at
           FROM cafmq.tasks_live t
          WHERE (t.state = ANY (ARRAY['uncommitted'::cafmq.task_state, 'waiting'::cafmq.task_state]))) l
  GROUP BY l.channel_name, l.state;

CREATE VIEW cafmq.queue_throughput AS
 SELECT t.channel_name,
    t.state,
    count(*) AS last_minute,
    round(((count(*))::numeric / 60.0), 3) AS per_second
   FROM cafmq.tasks_history t
  WHERE (t.finished_at > (now() - '00:01:00'::interval))
  GROUP BY t.channel_name, t.state;

CREATE VIEW cafmq.queue_totals AS
 SELECT t.channel_name,
    t.state,
    count(*) AS tasks
   FROM cafmq.tasks_live t
  GROUP BY t.channel_name, t.state
UNION ALL
 SELECT c.channel_name,
    c.state,
    (sum(c.tasks))::bigint AS tasks
   FROM cafmq.finished_counts c
  GROUP BY c.channel_name, c.state
 HAVING (sum(c.tasks) <> (0)::numeric);

CREATE TABLE cafmq.schedules (
    name text NOT NULL,
    spec jsonb NOT NULL,
    cron text,
    every interval,
    time_zone text DEFAULT 'UTC'::text NOT NULL,
    catch_up text DEFAULT 'once'::text NOT NULL,
    catch_up_limit integer DEFAULT 100 NOT NULL,
    grace interval DEFAULT '00:01:00'::interval NOT NULL,
    next_run_at timestamp with time zone NOT NULL,
    last_tick_at timestamp with time zone,
    ticks bigint DEFAULT 0 NOT NULL,
    missed bigint DEFAULT 0 NOT NULL,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schedules_catch_up_check CHECK ((catch_up = ANY (ARRAY['skip'::text, 'once'::text, 'all'::text]))),
    CONSTRAINT schedules_catch_up_limit_check CHECK ((catch_up_limit >= 1)),
    CONSTRAINT schedules_check CHECK (((cron IS NULL) <> (every IS NULL))),
    CONSTRAINT schedules_every_check CHECK ((every >= '00:00:01'::interval)),
    CONSTRAINT schedules_grace_check CHECK ((grace >= '00:00:00'::interval)),
    CONSTRAINT schedules_name_check CHECK (((octet_length(name) >= 1) AND (octet_length(name) <= 255))),
    CONSTRAINT schedules_spec_check CHECK ((jsonb_typeof(spec) = 'object'::text))
);

CREATE TABLE cafmq.schema_functions (
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE cafmq.schema_version (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    checksum text
);

CREATE TABLE cafmq.sessions (
    node text NOT NULL,
    incarnation timestamp with time zone NOT NULL,
    started uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    suspected_at timestamp with time zone,
    registered_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE cafmq.task_parents (
    child uuid NOT NULL,
    parent uuid NOT NULL,
    slot smallint NOT NULL,
    CONSTRAINT task_parents_check CHECK ((child <> parent)),
    CONSTRAINT task_parents_slot_check CHECK ((slot >= 0))
);

CREATE TABLE cafmq.tasks_history_default (
    id uuid NOT NULL,
    seq bigint NOT NULL,
    name text NOT NULL,
    channel_name text NOT NULL COLLATE pg_catalog."C",
    channel_args text NOT NULL COLLATE pg_catalog."C",
    state cafmq.task_state NOT NULL,
    ordered boolean NOT NULL,
    attempt integer DEFAULT 0 NOT NULL,
    max_attempts integer NOT NULL,
    run_at timestamp with time zone NOT NULL,
    backoff interval NOT NULL,
    backoff_cap interval NOT NULL,
    commit_deadline timestamp with time zone,
    timeout interval,
    deadline timestamp with time zone,
    unique_key text,
    cancel_requested boolean DEFAULT false NOT NULL,
    node text,
    last_error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    lost_attempts integer DEFAULT 0 NOT NULL,
    backoff_jitter text,
    attempt_base integer DEFAULT 0 NOT NULL,
    priority smallint DEFAULT 0 NOT NULL,
    result jsonb,
    payload_json jsonb,
    payload_bytes bytea,
    earlier_attempts jsonb,
    worker text,
    parents_left integer,
    on_parent_failure text,
    has_children boolean DEFAULT false NOT NULL,
    workflow_id uuid,
    CONSTRAINT tasks_attempts CHECK (((max_attempts >= 1) AND (attempt >= 0))),
    CONSTRAINT tasks_backoff CHECK (((backoff >= '00:00:00'::interval) AND (backoff_cap >= backoff))),
    CONSTRAINT tasks_backoff_jitter CHECK ((backoff_jitter = ANY (ARRAY['full'::text, 'equal'::text]))),
    CONSTRAINT tasks_channel_args_length CHECK ((octet_length(channel_args) <= 4096)),
    CONSTRAINT tasks_channel_name_length CHECK ((octet_length(channel_name) <= 255)),
    CONSTRAINT tasks_history_finished CHECK (((state = ANY (ARRAY['completed'::cafmq.task_state, 'failed'::cafmq.task_state, 'cancelled'::cafmq.task_state])) AND (finished_at IS NOT NULL))),
    CONSTRAINT tasks_name_length CHECK (((octet_length(name) >= 1) AND (octet_length(name) <= 255))),
    CONSTRAINT tasks_priority CHECK (((priority >= 0) AND ((priority = 0) OR (NOT ordered)))),
    CONSTRAINT tasks_timeout CHECK ((timeout > '00:00:00'::interval)),
    CONSTRAINT tasks_two_phase CHECK (((state = 'uncommitted'::cafmq.task_state) = (commit_deadline IS NOT NULL))),
    CONSTRAINT tasks_unique_key_length CHECK ((octet_length(unique_key) <= 1024))
);

CREATE TABLE cafmq.watches (
    task_id uuid NOT NULL,
    backend_pid integer DEFAULT pg_backend_pid() NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY cafmq.tasks_history ATTACH PARTITION cafmq.tasks_history_default DEFAULT;

ALTER TABLE ONLY cafmq.channel_limits
    ADD CONSTRAINT channel_limits_pkey PRIMARY KEY (channel_name);

ALTER TABLE ONLY cafmq.child_waits
    ADD CONSTRAINT child_waits_pkey PRIMARY KEY (child, slot);

ALTER TABLE ONLY cafmq.parent_results
    ADD CONSTRAINT parent_results_pkey PRIMARY KEY (id);

ALTER TABLE ONLY cafmq.pauses
    ADD CONSTRAINT pauses_pkey PRIMARY KEY (kind, value);

ALTER TABLE ONLY cafmq.schedules
    ADD CONSTRAINT schedules_pkey PRIMARY KEY (name);

ALTER TABLE ONLY cafmq.schema_functions
    ADD CONSTRAINT schema_functions_pkey PRIMARY KEY (name);

ALTER TABLE ONLY cafmq.schema_version
    ADD CONSTRAINT schema_version_pkey PRIMARY KEY (version);

ALTER TABLE ONLY cafmq.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (node);

ALTER TABLE ONLY cafmq.task_parents
    ADD CONSTRAINT task_parents_pkey PRIMARY KEY (child, parent);

ALTER TABLE ONLY cafmq.tasks_live
    ADD CONSTRAINT tasks_pkey PRIMARY KEY (id);

ALTER TABLE ONLY cafmq.watches
    ADD CONSTRAINT watches_pkey PRIMARY KEY (task_id, backend_pid);

CREATE INDEX finished_counts_day ON cafmq.finished_counts USING btree (day);

CREATE INDEX schedules_next ON cafmq.schedules USING btree (next_run_at);

CREATE INDEX task_parents_parent ON cafmq.task_parents USING btree (parent);

CREATE INDEX tasks_history_finished_at ON ONLY cafmq.tasks_history USING btree (finished_at);

CREATE INDEX tasks_history_default_finished_at_idx ON cafmq.tasks_history_default USING btree (finished_at);

CREATE INDEX tasks_history_id ON ONLY cafmq.tasks_history USING btree (id);

CREATE INDEX tasks_history_default_id_idx ON cafmq.tasks_history_default USING btree (id);

CREATE INDEX tasks_history_workflow ON ONLY cafmq.tasks_history USING btree (workflow_id) WHERE (workflow_id IS NOT NULL);

CREATE INDEX tasks_history_default_workflow_id_idx ON cafmq.tasks_history_default USING btree (workflow_id) WHERE (workflow_id IS NOT NULL);

CREATE INDEX tasks_live_workflow ON cafmq.tasks_live USING btree (workflow_id) WHERE (workflow_id IS NOT NULL);

CREATE INDEX tasks_ordered_live ON cafmq.tasks_live USING btree (cafmq.channel_index_key(channel_name, channel_args), channel_name, channel_args, seq) WHERE (ordered AND (state = ANY (ARRAY['uncommitted'::cafmq.task_state, 'waiting'::cafmq.task_state, 'pending'::cafmq.task_state, 'running'::cafmq.task_state])));

CREATE INDEX tasks_ordered_pending ON cafmq.tasks_live USING btree (run_at) WHERE (ordered AND (state = 'pending'::cafmq.task_state));

CREATE INDEX tasks_prioritized_queue ON cafmq.tasks_live USING btree (priority DESC, run_at, seq) WHERE ((state = 'pending'::cafmq.task_state) AND (NOT ordered) AND (priority > 0));

CREATE INDEX tasks_prioritized_ready ON cafmq.tasks_live USING btree (cafmq.channel_index_key(channel_name, channel_args), priority DESC, run_at, seq) WHERE ((state = 'pending'::cafmq.task_state) AND (NOT ordered) AND (priority > 0));

CREATE INDEX tasks_running ON cafmq.tasks_live USING btree (run_at) WHERE (state = 'running'::cafmq.task_state);

CREATE INDEX tasks_uncommitted ON cafmq.tasks_live USING btree (commit_deadline) WHERE (state = 'uncommitted'::cafmq.task_state);

CREATE UNIQUE INDEX tasks_unique_key ON cafmq.tasks_live USING btree (unique_key) WHERE ((unique_key IS NOT NULL) AND (state = ANY (ARRAY['uncommitted'::cafmq.task_state, 'waiting'::cafmq.task_state, 'pending'::cafmq.task_state, 'running'::cafmq.task_state])));

CREATE INDEX tasks_unordered_queue ON cafmq.tasks_live USING btree (run_at, seq) WHERE ((state = 'pending'::cafmq.task_state) AND (NOT ordered));

CREATE INDEX tasks_unordered_ready ON cafmq.tasks_live USING btree (cafmq.channel_index_key(channel_name, channel_args), run_at, seq) WHERE ((state = 'pending'::cafmq.task_state) AND (NOT ordered));

ALTER INDEX cafmq.tasks_history_finished_at ATTACH PARTITION cafmq.tasks_history_default_finished_at_idx;

ALTER INDEX cafmq.tasks_history_id ATTACH PARTITION cafmq.tasks_history_default_id_idx;

ALTER INDEX cafmq.tasks_history_workflow ATTACH PARTITION cafmq.tasks_history_default_workflow_id_idx;

CREATE TRIGGER count_finished_removed AFTER DELETE ON cafmq.tasks_history REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION cafmq.count_finished();

CREATE TRIGGER count_finished_updated AFTER UPDATE ON cafmq.tasks_history REFERENCING OLD TABLE AS was NEW TABLE AS now_is FOR EACH STATEMENT EXECUTE FUNCTION cafmq.count_finished();
