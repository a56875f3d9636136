-- The SQL API: spawn one task from SQL, a trigger or psql, like
-- graphile-worker's add_job. Arguments left out take the defaults of a
-- C++ task_options{} (a task definition's own defaults live in the program,
-- which the database does not know):
--   SELECT cafmq.spawn('send_email', '{"to": "a@example.com"}');
--   SELECT cafmq.spawn('ship', jsonb_build_object('order', NEW.id),
--                      channel_name => 'orders', channel_args => NEW.customer,
--                      ordered => true);
-- Returns the task's id; with a unique_key that a live task holds already,
-- that task's id (nothing is spawned). Bad input raises
-- invalid_parameter_value (22023) with a message naming the argument, and
-- nothing is written. Runs in the caller's transaction: a rollback takes
-- the task back, and runners are notified only at commit.
CREATE FUNCTION cafmq.spawn(
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
  v_id uuid := coalesce(spawn.id, gen_random_uuid());
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
