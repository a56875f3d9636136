-- Throughput: fewer index and foreign-key writes per task, a claim that
-- reaches the claimed rows through the primary key (the old form could fall
-- back to sequential scans of tasks and payloads), and a runner can give
-- back attempts it claimed but never started.

-- Payload rows go with their task through a statement-level trigger rather
-- than a foreign key: the key's check locked the task row once per inserted
-- payload (FOR KEY SHARE), a third of a batch spawn's time.
ALTER TABLE cafmq.payloads DROP CONSTRAINT payloads_id_fkey;

CREATE FUNCTION cafmq.drop_payloads() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cafmq.payloads p USING gone g WHERE p.id = g.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER tasks_drop_payloads AFTER DELETE ON cafmq.tasks
  REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION cafmq.drop_payloads();

-- Only tasks that have a unique key enter its index (a NULL key was indexed
-- on every spawn and every claim).
DROP INDEX cafmq.tasks_unique_key;
CREATE UNIQUE INDEX tasks_unique_key ON cafmq.tasks (unique_key)
  WHERE unique_key IS NOT NULL
    AND state IN ('uncommitted', 'pending', 'running');

-- Inserts tasks in array order. Ordered spawns take a per-channel lock first so
-- that positions commit in order; a live unique key makes a row a duplicate.
-- Returns, in input order, the task id (the live one for a duplicate) and
-- whether a task was created.
CREATE OR REPLACE FUNCTION cafmq.spawn(p_tasks json)
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
CREATE OR REPLACE FUNCTION cafmq.claim(p_node text, p_names text[], p_channels text[],
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
  v_running bigint;
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
  -- One update through the primary key: tasks that must not run (again)
  -- end here, the others start running and are returned with their payload.
  RETURN QUERY
  WITH claimed AS (
    UPDATE cafmq.tasks t
       SET state = CASE
             WHEN NOT (t.cancel_requested OR t.deadline IS NOT NULL AND t.deadline <= now()
                       OR (t.state = 'running' AND t.attempt >= t.max_attempts))
               THEN 'running'
             WHEN t.cancel_requested THEN 'cancelled'
             ELSE 'failed' END::cafmq.task_state,
           attempt = CASE
             WHEN t.cancel_requested OR t.deadline IS NOT NULL AND t.deadline <= now()
                  OR (t.state = 'running' AND t.attempt >= t.max_attempts)
               THEN t.attempt ELSE t.attempt + 1 END,
           run_at = CASE
             WHEN t.cancel_requested OR t.deadline IS NOT NULL AND t.deadline <= now()
                  OR (t.state = 'running' AND t.attempt >= t.max_attempts)
               THEN t.run_at ELSE now() + p_lease END,
           started_at = CASE
             WHEN t.cancel_requested OR t.deadline IS NOT NULL AND t.deadline <= now()
                  OR (t.state = 'running' AND t.attempt >= t.max_attempts)
               THEN t.started_at ELSE now() END,
           node = CASE
             WHEN t.cancel_requested OR t.deadline IS NOT NULL AND t.deadline <= now()
                  OR (t.state = 'running' AND t.attempt >= t.max_attempts)
               THEN t.node ELSE p_node END,
           finished_at = CASE
             WHEN t.cancel_requested OR t.deadline IS NOT NULL AND t.deadline <= now()
                  OR (t.state = 'running' AND t.attempt >= t.max_attempts)
               THEN now() ELSE t.finished_at END,
           last_error = CASE
             WHEN t.cancel_requested THEN t.last_error
             WHEN t.deadline <= now() THEN 'deadline passed before the task ran'
             WHEN t.state = 'running' AND t.attempt >= t.max_attempts
               THEN 'lease expired during the final attempt'
             WHEN t.state = 'running' THEN 'lease expired'
             ELSE t.last_error END
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

-- Gives back attempts that were claimed but never started (a stopping
-- runner's buffer): they are pending again at once and the claim does not
-- count as an attempt. Fenced like complete. Returns the ids given back.
CREATE FUNCTION cafmq.release(p_ids uuid[], p_attempts integer[])
RETURNS SETOF uuid
LANGUAGE plpgsql AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
BEGIN
  WITH r AS (
    UPDATE cafmq.tasks t
       SET state = 'pending', attempt = t.attempt - 1, run_at = now(),
           node = NULL
      FROM unnest(p_ids, p_attempts) AS f (id, attempt)
     WHERE t.id = f.id AND t.attempt = f.attempt AND t.state = 'running'
    RETURNING t.id, t.channel_name)
  SELECT array_agg(r.id), array_agg(r.channel_name) INTO v_done, v_wake FROM r;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;

-- The batch functions get arrays of hundreds of ids. Custom plans see the
-- array's size and switch to sequential scans and hash joins of the whole
-- table; generic plans assume a few ids and keep the primary-key probes,
-- which stay cheap at any table size.
ALTER FUNCTION cafmq.claim(text, text[], text[], integer, interval, text, text)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION cafmq.complete(uuid[], integer[])
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION cafmq.fail(uuid[], integer[], text[], boolean[])
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION cafmq.keep_alive(uuid[], integer[], interval)
  SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION cafmq.release(uuid[], integer[])
  SET plan_cache_mode = force_generic_plan;
