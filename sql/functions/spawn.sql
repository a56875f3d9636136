-- SPDX-License-Identifier: BSD-3-Clause

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
CREATE OR REPLACE FUNCTION cafmq.spawn(
    name text,
    payload jsonb,
    channel_name text DEFAULT ''::text,
    channel_args text DEFAULT ''::text,
    run_at timestamp with time zone DEFAULT NULL::timestamp with time zone,
    max_attempts integer DEFAULT 5,
    ordered boolean DEFAULT false,
    unique_key text DEFAULT NULL::text,
    backoff interval DEFAULT '00:00:01'::interval,
    backoff_cap interval DEFAULT '01:00:00'::interval,
    timeout interval DEFAULT NULL::interval,
    deadline timestamp with time zone DEFAULT NULL::timestamp with time zone,
    jitter text DEFAULT NULL::text,
    id uuid DEFAULT NULL::uuid,
    priority integer DEFAULT 0)
 RETURNS uuid
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

-- Spawns a batch: p_tasks is a JSON array of the library's spawn specs
-- (cafmq::detail::spawn_access::to_spec). Batches without unique keys (the
-- usual case) take a plain INSERT: ON CONFLICT inserts speculatively (an
-- extra WAL record per row), and 20,000 specs spent ~140 ms in that alone.
-- A spec whose unique_key a live task holds spawns nothing. Returns, per
-- spec in order, the task's id (the holder's, for a held key) and whether
-- it was created.
CREATE OR REPLACE FUNCTION cafmq.spawn(p_tasks json)
 RETURNS TABLE(id uuid, created boolean)
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
