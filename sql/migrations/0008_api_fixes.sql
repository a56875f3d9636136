-- Fixes of issue 15: a second cancel is an error, retries may jitter.

-- Cancels a task, as in 0003. Returns 'cancelled', 'requested', 'unknown',
-- 'expired' for a reservation past its commit deadline (gone, even before
-- maintenance removes it), or 'already <state>' for a finished task: 0003
-- returned the bare state, so cancelling a cancelled task read as success.
CREATE OR REPLACE FUNCTION cafmq.cancel(p_id uuid) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_task record;
BEGIN
  SELECT t.state, t.ordered, t.channel_name, t.commit_deadline INTO v_task
    FROM cafmq.tasks t WHERE t.id = p_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 'unknown';
  END IF;
  IF v_task.state IN ('completed', 'failed', 'cancelled') THEN
    RETURN 'already ' || v_task.state::text;
  END IF;
  IF v_task.state = 'uncommitted' AND v_task.commit_deadline <= now() THEN
    RETURN 'expired';
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

-- How a task spreads its retries (AWS's definitions, on the capped
-- exponential delay d): NULL waits d; 'full' waits random(0, d), 'equal'
-- d/2 + random(0, d/2). Runners that retry together then do not all come
-- back at the same moment.
ALTER TABLE cafmq.tasks ADD COLUMN backoff_jitter text
  CONSTRAINT tasks_backoff_jitter CHECK (backoff_jitter IN ('full', 'equal'));
ALTER TYPE cafmq.spawn_spec ADD ATTRIBUTE jitter text;

-- Delay before retry number `attempt` with `jitter`; `draw` in [0, 1) is
-- the random part, passed in so one failure uses one draw throughout.
CREATE FUNCTION cafmq.retry_delay(p_backoff interval, p_cap interval,
                                  p_attempt integer, p_jitter text,
                                  p_draw double precision) RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p_jitter
           WHEN 'full' THEN d * p_draw
           WHEN 'equal' THEN d / 2 + d / 2 * p_draw
           ELSE d
         END
    FROM cafmq.retry_delay(p_backoff, p_cap, p_attempt) AS d
$$;

-- Spawn, as in 0005, storing each task's jitter.
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
  IF NOT EXISTS (SELECT 1 FROM unnest(v_specs) s WHERE s.unique_key IS NOT NULL)
  THEN
    -- No unique keys (the usual case): nothing can conflict, so plain
    -- inserts (no speculative insertion, no join of created rows) straight
    -- from the array, in its order.
    INSERT INTO cafmq.tasks AS t
      (id, seq, name, channel_name, channel_args, state, ordered, max_attempts,
       run_at, backoff, backoff_cap, backoff_jitter, commit_deadline, timeout,
       deadline, unique_key)
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
           NULL
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
       deadline, unique_key)
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

-- Records failed attempts, as in 0006, with the retry delay jittered as the
-- task asks; one draw per failure serves both the retry time and the
-- deadline check.
CREATE OR REPLACE FUNCTION cafmq.fail(p_ids uuid[], p_attempts integer[],
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
         run_at = now() + cafmq.retry_delay(t.backoff, t.backoff_cap,
                                            t.attempt, t.backoff_jitter,
                                            f.draw),
         last_error = f.error, lost_attempts = 0
    FROM (SELECT u.*, random() AS draw
            FROM unnest(p_ids, p_attempts, p_errors, p_retryable)
                 AS u (id, attempt, error, retryable)) AS f
   WHERE t.id = f.id AND t.attempt = f.attempt AND t.state = 'running'
     AND f.retryable AND t.attempt < t.max_attempts AND NOT t.cancel_requested
     AND (t.deadline IS NULL OR now() + cafmq.retry_delay(
            t.backoff, t.backoff_cap, t.attempt, t.backoff_jitter, f.draw)
          < t.deadline)
  RETURNING t.id, t.state, t.run_at;
  WITH fin AS (
    UPDATE cafmq.tasks t
       SET state = CASE WHEN t.cancel_requested THEN 'cancelled'
                        ELSE 'failed' END::cafmq.task_state,
           last_error = f.error, finished_at = now(), lost_attempts = 0
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
ALTER FUNCTION cafmq.fail(uuid[], integer[], text[], boolean[])
  SET plan_cache_mode = force_generic_plan;
