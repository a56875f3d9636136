-- Claim plans that do not depend on the statistics of the moment, and a
-- spawn without speculative insertion for batches without unique keys.
--
-- Generic plans are made once per session from the statistics of that
-- moment. After a VACUUM of an idle queue the partial indexes of live tasks
-- record zero rows; a session that starts then planned the fill pass as a
-- scan of every ready task followed by a sort, and kept that plan while the
-- queue grew: each claim read and sorted the whole backlog. Every ordered
-- read of a claim has an index in its order, so the claim never sorts.
ALTER FUNCTION cafmq.claim(text, text[], text[], integer, interval, text, text)
  SET enable_sort = off;

-- Spawn, as in 0004, with a path for batches without unique keys (the usual
-- case): an INSERT with ON CONFLICT inserts speculatively (an extra WAL
-- record per row) and the created rows had to be joined back to their
-- payloads; 20,000 specs took ~680 ms in the function, ~140 ms of it in
-- the speculative insertion alone. Batches with unique keys take the 0004
-- path unchanged.
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

-- Status updates driven by the (few) watches: the 0002 form probed the task
-- table's primary key once for every id of a claimed or completed batch
-- whenever anything was watched (a drain with 100 watched tasks ran 5–10 %
-- slower); now only watched ids of the batch reach the task table.
CREATE OR REPLACE FUNCTION cafmq.publish_status(p_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
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
