-- The queue's rules: every rule that must hold across processes is one
-- function here. The C++ side only calls them.

-- One spawn request; the client sends a JSON array of these.
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
  bytes text);

-- Advisory-lock key of an ordered channel (a hash; a collision only serializes).
CREATE FUNCTION cafmq.channel_key(p_name text, p_args text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT hashtextextended(p_name || chr(31) || p_args, 7305)
$$;

-- Delay before retry number `attempt`: initial * 2^(attempt-1), at most cap.
CREATE FUNCTION cafmq.retry_delay(p_backoff interval, p_cap interval,
                                  p_attempt integer) RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN p_attempt > 40 THEN p_cap
              ELSE least(p_cap, p_backoff * power(2, greatest(p_attempt, 1) - 1))
         END
$$;

-- Wakes runners of these channels; one notification per channel and commit.
CREATE FUNCTION cafmq.notify_ready(p_channels text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cafmq_ready', c)
    FROM (SELECT DISTINCT unnest(p_channels) AS c) d;
END
$$;

-- Publishes the current state of the watched ones among these tasks on
-- cafmq_status as "id state attempt". One probe of a tiny table when nobody
-- watches.
CREATE FUNCTION cafmq.publish_status(p_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM cafmq.watches) THEN
    RETURN;
  END IF;
  PERFORM pg_notify('cafmq_status', t.id || ' ' || t.state || ' ' || t.attempt)
     FROM cafmq.tasks t
    WHERE t.id = ANY (p_ids)
      AND t.id IN (SELECT w.task_id FROM cafmq.watches w);
END
$$;

-- Inserts tasks in array order. Ordered spawns take a per-channel lock first so
-- that positions commit in order; a live unique key makes a row a duplicate.
-- Returns, in input order, the task id (the live one for a duplicate) and
-- whether a task was created.
CREATE FUNCTION cafmq.spawn(p_tasks json)
RETURNS TABLE (id uuid, created boolean)
LANGUAGE plpgsql AS $$
DECLARE
  v_specs cafmq.spawn_spec[];
  v_created uuid[];
BEGIN
  v_specs := ARRAY(SELECT x FROM json_populate_recordset(NULL::cafmq.spawn_spec, p_tasks) x);
  PERFORM pg_advisory_xact_lock(k)
    FROM (SELECT DISTINCT cafmq.channel_key(s.channel_name, s.channel_args) AS k
            FROM unnest(v_specs) s WHERE s.ordered ORDER BY 1) keys;
  WITH s AS (
    SELECT * FROM unnest(v_specs) WITH ORDINALITY AS u
  ), ins AS (
    INSERT INTO cafmq.tasks AS t
      (id, seq, name, channel_name, channel_args, state, ordered, max_attempts,
       run_at, backoff, backoff_cap, commit_deadline, timeout, deadline,
       unique_key)
    SELECT o.id, nextval('cafmq.task_seq'), o.name, o.channel_name,
           o.channel_args,
           CASE WHEN o.commit_us IS NULL THEN 'pending'
                ELSE 'uncommitted' END::cafmq.task_state,
           o.ordered, o.max_attempts,
           coalesce(to_timestamp(o.run_at_us / 1e6),
                    now() + make_interval(secs => coalesce(o.delay_us, 0) / 1e6)),
           make_interval(secs => o.backoff_us / 1e6),
           make_interval(secs => o.backoff_cap_us / 1e6),
           now() + make_interval(secs => o.commit_us / 1e6),
           make_interval(secs => o.timeout_us / 1e6),
           to_timestamp(o.deadline_us / 1e6),
           o.unique_key
      FROM (SELECT * FROM s ORDER BY s.ordinality) o
    ON CONFLICT (unique_key)
      WHERE state IN ('uncommitted', 'pending', 'running') DO NOTHING
    RETURNING t.id
  ), pay AS (
    INSERT INTO cafmq.payloads (id, json, bytes)
    SELECT s.id, s.json::jsonb, decode(s.bytes, 'base64')
      FROM s JOIN ins ON ins.id = s.id
  )
  SELECT array_agg(ins.id) INTO v_created FROM ins;
  PERFORM cafmq.notify_ready(ARRAY(
    SELECT s.channel_name FROM unnest(v_specs) s WHERE s.commit_us IS NULL));
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

-- Claims up to p_limit tasks with names in p_names for node p_node, giving
-- each a lease of p_lease. Fairness: the first pass takes one task from each
-- active (channel_name, channel_args) in key order, starting after the cursor
-- that the caller got from its previous claim; a second pass takes expired
-- leases, a third fills the batch in queue order. Ordered channels are only
-- ever served through their head (the live ordered task with the lowest seq),
-- so two tasks of one ordered channel never run at once. Tasks cancelled,
-- past their deadline, or out of attempts end here instead of running.
-- The last row (id NULL) carries the cursor and the time until something
-- becomes runnable (0: call again at once; NULL: nothing scheduled).
CREATE FUNCTION cafmq.claim(p_node text, p_names text[], p_channels text[],
                            p_limit integer, p_lease interval,
                            p_cursor_name text, p_cursor_args text)
RETURNS TABLE (id uuid, name text, channel_name text, channel_args text,
               attempt integer, max_attempts integer, ordered boolean,
               timeout interval,
               deadline timestamptz, payload_json text, payload_bytes bytea,
               cursor_name text, cursor_args text, wait interval)
LANGUAGE plpgsql AS $$
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
  v_wake text[];
BEGIN
  IF p_channels = '{}' THEN
    p_channels := NULL;
  END IF;
  -- Pass 1: one task from each active channel, round-robin from the cursor.
  LOOP
    IF v_visits >= p_limit THEN
      v_cut := true;
      EXIT;
    END IF;
    SELECT c.n, c.a INTO v_next FROM (
      (SELECT t.channel_name AS n, t.channel_args AS a FROM cafmq.tasks t
        WHERE t.state = 'pending' AND NOT t.ordered
          AND (t.channel_name, t.channel_args) >= (v_from_name, v_from_args)
          AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
        ORDER BY t.channel_name, t.channel_args LIMIT 1)
      UNION ALL
      (SELECT t.channel_name, t.channel_args FROM cafmq.tasks t
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
    v_name := v_next.n;
    v_args := v_next.a;
    v_from_name := v_name;
    v_from_args := v_args || chr(1);
    v_visits := v_visits + 1;
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
    IF v_id IS NULL THEN
      SELECT t.id INTO v_id FROM cafmq.tasks t
       WHERE t.state = 'pending' AND NOT t.ordered
         AND t.channel_name = v_name AND t.channel_args = v_args
         AND t.run_at <= now() AND t.name = ANY (p_names)
       ORDER BY t.run_at, t.seq LIMIT 1
       FOR UPDATE SKIP LOCKED;
    END IF;
    IF v_id IS NOT NULL THEN
      v_ids := v_ids || v_id;
      EXIT WHEN cardinality(v_ids) >= p_limit;
    END IF;
  END LOOP;
  -- Pass 2: unordered tasks whose lease expired (their runner is gone).
  IF cardinality(v_ids) < p_limit THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks t
       WHERE t.state = 'running' AND NOT t.ordered AND t.run_at <= now()
         AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
       ORDER BY t.run_at LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  END IF;
  -- Pass 3: fill the batch in queue order.
  IF cardinality(v_ids) < p_limit THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks t
       WHERE t.state = 'pending' AND NOT t.ordered AND t.run_at <= now()
         AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND t.id <> ALL (v_ids)
       ORDER BY t.run_at, t.seq LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  END IF;
  -- Tasks that must not run (again) end here.
  WITH fin AS (
    UPDATE cafmq.tasks t
       SET state = CASE WHEN t.cancel_requested THEN 'cancelled'
                        ELSE 'failed' END::cafmq.task_state,
           last_error = CASE
             WHEN t.cancel_requested THEN t.last_error
             WHEN t.deadline <= now() THEN 'deadline passed before the task ran'
             ELSE 'lease expired during the final attempt' END,
           finished_at = now()
     WHERE t.id = ANY (v_ids)
       AND (t.cancel_requested OR t.deadline <= now()
            OR (t.state = 'running' AND t.attempt >= t.max_attempts))
    RETURNING t.channel_name, t.ordered)
  SELECT array_agg(fin.channel_name) FILTER (WHERE fin.ordered)
    INTO v_wake FROM fin;
  PERFORM cafmq.notify_ready(v_wake);
  RETURN QUERY
  UPDATE cafmq.tasks t
     SET state = 'running', attempt = t.attempt + 1, run_at = now() + p_lease,
         started_at = now(), node = p_node,
         last_error = CASE WHEN t.state = 'running' THEN 'lease expired'
                           ELSE t.last_error END
    FROM cafmq.payloads p
   WHERE t.id = ANY (v_ids) AND t.state IN ('pending', 'running')
     AND p.id = t.id
  RETURNING t.id, t.name, t.channel_name::text, t.channel_args::text,
            t.attempt, t.max_attempts, t.ordered, t.timeout, t.deadline,
            p.json::text, p.bytes, NULL::text, NULL::text, NULL::interval;
  PERFORM cafmq.publish_status(v_ids);
  RETURN QUERY
  SELECT NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::integer,
         NULL::integer, NULL::boolean, NULL::interval, NULL::timestamptz, NULL::text,
         NULL::bytea, v_name, v_args,
         CASE WHEN v_cut AND cardinality(v_ids) > 0 THEN interval '0'
         ELSE least(
           (SELECT min(t.run_at) FROM cafmq.tasks t
             WHERE t.state = 'pending' AND NOT t.ordered AND t.run_at > now()),
           (SELECT min(t.run_at) FROM cafmq.tasks t
             WHERE t.state = 'pending' AND t.ordered AND t.run_at > now()),
           (SELECT min(t.run_at) FROM cafmq.tasks t
             WHERE t.state = 'running' AND t.run_at > now()),
           (SELECT min(t.commit_deadline) FROM cafmq.tasks t
             WHERE t.state = 'uncommitted' AND t.commit_deadline > now()))
           - now() END;
END
$$;

-- Completes the given attempts. Fenced: an attempt that is no longer current
-- (re-claimed, finished, cleared) changes nothing. Returns the ids completed.
CREATE FUNCTION cafmq.complete(p_ids uuid[], p_attempts integer[])
RETURNS SETOF uuid
LANGUAGE plpgsql AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
BEGIN
  WITH done AS (
    UPDATE cafmq.tasks t SET state = 'completed', finished_at = now()
      FROM unnest(p_ids, p_attempts) AS f (id, attempt)
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

-- Records failed attempts at once. A retryable failure with attempts (and
-- deadline) left goes back to pending after the backoff; otherwise the task
-- ends failed, or cancelled when a cancel was requested. Fenced like complete.
-- Returns the attempts recorded, with the state each task is in now.
CREATE FUNCTION cafmq.fail(p_ids uuid[], p_attempts integer[],
                           p_errors text[], p_retryable boolean[])
RETURNS TABLE (id uuid, state cafmq.task_state, run_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  v_ids uuid[];
  v_states cafmq.task_state[];
  v_times timestamptz[];
  v_wake text[];
BEGIN
  RETURN QUERY
  UPDATE cafmq.tasks t
     SET state = 'pending',
         run_at = now() + cafmq.retry_delay(t.backoff, t.backoff_cap, t.attempt),
         last_error = f.error
    FROM unnest(p_ids, p_attempts, p_errors, p_retryable)
         AS f (id, attempt, error, retryable)
   WHERE t.id = f.id AND t.attempt = f.attempt AND t.state = 'running'
     AND f.retryable AND t.attempt < t.max_attempts AND NOT t.cancel_requested
     AND (t.deadline IS NULL OR now() + cafmq.retry_delay(
            t.backoff, t.backoff_cap, t.attempt) < t.deadline)
  RETURNING t.id, t.state, t.run_at;
  WITH fin AS (
    UPDATE cafmq.tasks t
       SET state = CASE WHEN t.cancel_requested THEN 'cancelled'
                        ELSE 'failed' END::cafmq.task_state,
           last_error = f.error, finished_at = now()
      FROM unnest(p_ids, p_attempts, p_errors) AS f (id, attempt, error)
     WHERE t.id = f.id AND t.attempt = f.attempt AND t.state = 'running'
    RETURNING t.id, t.state, t.run_at, t.channel_name, t.ordered)
  SELECT array_agg(fin.id), array_agg(fin.state), array_agg(fin.run_at),
         array_agg(fin.channel_name) FILTER (WHERE fin.ordered)
    INTO v_ids, v_states, v_times, v_wake FROM fin;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(p_ids);
  RETURN QUERY SELECT * FROM unnest(v_ids, v_states, v_times);
END
$$;

-- Extends the leases of running attempts (never shortens them). Returns the
-- attempts still owned, with their cancel flag; a missing id is lost.
CREATE FUNCTION cafmq.keep_alive(p_ids uuid[], p_attempts integer[],
                                 p_lease interval)
RETURNS TABLE (id uuid, cancel_requested boolean)
LANGUAGE sql AS $$
  UPDATE cafmq.tasks t SET run_at = greatest(t.run_at, now() + p_lease)
    FROM unnest(p_ids, p_attempts) AS f (id, attempt)
   WHERE t.id = f.id AND t.attempt = f.attempt AND t.state = 'running'
  RETURNING t.id, t.cancel_requested
$$;

-- Saves a new payload (NULL keeps the old one) for the next attempt, adds
-- attempts, and optionally extends the lease. During the final attempt it
-- only grants a retry when p_extra_attempts > 0 (no NULL-lease quirk).
CREATE FUNCTION cafmq.checkpoint(p_id uuid, p_attempt integer, p_json text,
                                 p_bytes bytea, p_extra_attempts integer,
                                 p_lease interval)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE cafmq.tasks t
     SET max_attempts = t.max_attempts + greatest(coalesce(p_extra_attempts, 0), 0),
         run_at = CASE WHEN p_lease IS NULL THEN t.run_at
                       ELSE greatest(t.run_at, now() + p_lease) END
   WHERE t.id = p_id AND t.attempt = p_attempt AND t.state = 'running';
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  UPDATE cafmq.payloads p
     SET json = coalesce(p_json::jsonb, p.json),
         bytes = coalesce(p_bytes, p.bytes)
   WHERE p.id = p_id;
  RETURN true;
END
$$;

-- Commits two-phase reservations that have not expired; wakes runners.
-- Returns the ids committed now.
CREATE FUNCTION cafmq.commit(p_ids uuid[]) RETURNS SETOF uuid
LANGUAGE plpgsql AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
BEGIN
  WITH c AS (
    UPDATE cafmq.tasks t SET state = 'pending', commit_deadline = NULL
     WHERE t.id = ANY (p_ids) AND t.state = 'uncommitted'
       AND t.commit_deadline > now()
    RETURNING t.id, t.channel_name)
  SELECT array_agg(c.id), array_agg(c.channel_name) INTO v_done, v_wake FROM c;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;

-- Removes reservations whose commit deadline passed (a bounded batch).
CREATE FUNCTION cafmq.expire_reservations(p_limit integer) RETURNS bigint
LANGUAGE sql AS $$
  WITH gone AS (
    DELETE FROM cafmq.tasks t
     WHERE t.id IN (SELECT x.id FROM cafmq.tasks x
                     WHERE x.state = 'uncommitted' AND x.commit_deadline <= now()
                     ORDER BY x.commit_deadline LIMIT p_limit
                     FOR UPDATE SKIP LOCKED)
    RETURNING 1)
  SELECT count(*) FROM gone
$$;

-- Deletes every task (any state) of these channel names, all args.
CREATE FUNCTION cafmq.clear(p_channel_names text[]) RETURNS bigint
LANGUAGE sql AS $$
  WITH gone AS (
    DELETE FROM cafmq.tasks t WHERE t.channel_name = ANY (p_channel_names)
    RETURNING 1)
  SELECT count(*) FROM gone
$$;

-- Deletes every task.
CREATE FUNCTION cafmq.clear_all() RETURNS bigint
LANGUAGE sql AS $$
  WITH gone AS (DELETE FROM cafmq.tasks RETURNING 1) SELECT count(*) FROM gone
$$;
