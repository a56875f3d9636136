-- Operations (issue 14): the views the CLI, the metrics and the dashboard
-- read, retry by hand, and time-ordered ids for tasks spawned from SQL.

-- Live tasks per channel and state. Each arm matches one partial index
-- (tasks_unordered_ready, tasks_ordered_pending, tasks_running,
-- tasks_uncommitted), so the view costs the live tasks, never the finished
-- ones, however many are kept. oldest_pending_age: how long the oldest
-- pending task has been runnable (its run_at passed).
CREATE VIEW cafmq.queue_depth AS
SELECT l.channel_name, l.state, count(*) AS tasks,
       count(*) FILTER (WHERE l.state = 'pending' AND l.run_at <= now())
         AS ready,
       CASE WHEN l.state = 'pending'
            THEN now() - min(l.run_at) FILTER (WHERE l.run_at <= now())
       END AS oldest_pending_age
  FROM (SELECT t.channel_name, t.state, t.run_at FROM cafmq.tasks t
         WHERE t.state = 'pending' AND NOT t.ordered
        UNION ALL
        SELECT t.channel_name, t.state, t.run_at FROM cafmq.tasks t
         WHERE t.ordered AND t.state = 'pending'
        UNION ALL
        SELECT t.channel_name, t.state, t.run_at FROM cafmq.tasks t
         WHERE t.state = 'running'
        UNION ALL
        SELECT t.channel_name, t.state, t.run_at FROM cafmq.tasks t
         WHERE t.state = 'uncommitted') l
 GROUP BY l.channel_name, l.state;

-- Tasks that finished in the last minute per channel and state (a range of
-- the tasks_finished index): the throughput.
CREATE VIEW cafmq.queue_throughput AS
SELECT t.channel_name, t.state, count(*) AS last_minute,
       round(count(*) / 60.0, 3) AS per_second
  FROM cafmq.tasks t
 WHERE t.state IN ('completed', 'failed', 'cancelled')
   AND t.finished_at > now() - interval '1 minute'
 GROUP BY t.channel_name, t.state;

-- Every kept task per channel and state: exact, and a scan of the table
-- (its size is bounded by the retention that prune applies).
CREATE VIEW cafmq.queue_totals AS
SELECT t.channel_name, t.state, count(*) AS tasks
  FROM cafmq.tasks t
 GROUP BY t.channel_name, t.state;

-- The filter of a listing, a bulk retry or a bulk cancel: every argument
-- that is not NULL must match (states, name, channel name, created at least
-- / at most this many microseconds ago). Inlined into the caller's query.
CREATE FUNCTION cafmq.task_matches(t cafmq.tasks, p_states text[],
                                   p_name text, p_channel text,
                                   p_older_us bigint, p_newer_us bigint)
RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT (p_states IS NULL OR t.state::text = ANY (p_states))
     AND (p_name IS NULL OR t.name = p_name)
     AND (p_channel IS NULL OR t.channel_name = p_channel)
     AND (p_older_us IS NULL
          OR t.created_at <= now() - p_older_us * interval '1 microsecond')
     AND (p_newer_us IS NULL
          OR t.created_at >= now() - p_newer_us * interval '1 microsecond')
$$;

-- Attempts used before the last retry by hand: a retry grants as many
-- attempts as the task was first given (max_attempts - attempt_base).
ALTER TABLE cafmq.tasks ADD COLUMN attempt_base integer NOT NULL DEFAULT 0;

-- Retry by hand: a failed or cancelled task is pending again, runnable now,
-- with a fresh attempt budget and a fresh lost-lease count. Its attempt
-- number goes on counting, so an old attempt stays fenced out; its last
-- error stays. Returns one row per id asked for: 'retried', 'unknown',
-- the state a live or completed task is in, 'deadline passed', or
-- 'unique key held' (a live task holds its unique key now).
CREATE FUNCTION cafmq.retry(p_ids uuid[])
RETURNS TABLE(id uuid, outcome text)
LANGUAGE plpgsql AS $$
DECLARE
  v record;
  v_channels text[] := '{}';
  v_retried uuid[] := '{}';
BEGIN
  FOR v IN SELECT t.id, t.state, t.deadline, t.channel_name, t.attempt,
                  t.max_attempts, t.attempt_base
             FROM cafmq.tasks t WHERE t.id = ANY (p_ids)
            ORDER BY t.id FOR UPDATE LOOP
    id := v.id;
    IF v.state NOT IN ('failed', 'cancelled') THEN
      outcome := v.state::text;
    ELSIF v.deadline IS NOT NULL AND v.deadline <= now() THEN
      outcome := 'deadline passed';
    ELSE
      BEGIN
        UPDATE cafmq.tasks t
           SET state = 'pending', run_at = now(), finished_at = NULL,
               cancel_requested = false, lost_attempts = 0, node = NULL,
               max_attempts = v.attempt + v.max_attempts - v.attempt_base,
               attempt_base = v.attempt
         WHERE t.id = v.id;
        outcome := 'retried';
        v_channels := v_channels || v.channel_name;
        v_retried := v_retried || v.id;
      EXCEPTION WHEN unique_violation THEN
        outcome := 'unique key held';
      END;
    END IF;
    RETURN NEXT;
  END LOOP;
  RETURN QUERY SELECT u, 'unknown'::text FROM unnest(p_ids) u
                WHERE NOT EXISTS (SELECT 1 FROM cafmq.tasks t WHERE t.id = u);
  IF cardinality(v_retried) > 0 THEN
    PERFORM cafmq.notify_ready(ARRAY(SELECT DISTINCT unnest(v_channels)));
    PERFORM cafmq.publish_status(v_retried);
  END IF;
END $$;

-- A time-ordered id (UUID version 7: milliseconds of the database clock,
-- 12 bits of the millisecond's fraction, then random bits), like the
-- library's uuid::time_ordered(): listings page on the primary key, newest
-- first.
CREATE FUNCTION cafmq.time_ordered_uuid() RETURNS uuid
LANGUAGE sql VOLATILE AS $$
  SELECT (lpad(to_hex(floor(extract(epoch FROM c) * 1000)::bigint), 12, '0')
          || '7'
          || lpad(to_hex((extract(microseconds FROM c)::bigint % 1000)
                         * 4096 / 1000), 3, '0')
          || substr(replace(gen_random_uuid()::text, '-', ''), 17, 16))::uuid
    FROM clock_timestamp() c
$$;

-- cafmq.spawn as in 0009, with a time-ordered id when none is given.
CREATE OR REPLACE FUNCTION cafmq.spawn(
  name text,
  payload jsonb,
  channel_name text DEFAULT '',
  channel_args text DEFAULT '',
  run_at timestamptz DEFAULT NULL,
  max_attempts integer DEFAULT 5,
  ordered boolean DEFAULT false,
  unique_key text DEFAULT NULL,
  backoff interval DEFAULT '1 second',
  backoff_cap interval DEFAULT '1 hour',
  timeout interval DEFAULT NULL,
  deadline timestamptz DEFAULT NULL,
  jitter text DEFAULT NULL,
  id uuid DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql AS $$
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
    'json', spawn.payload::text))) s;
  RETURN v_result;
END $$;
