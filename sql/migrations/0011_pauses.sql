-- Cluster-wide pause and resume of a channel name or a task name: no runner
-- claims its tasks until it is resumed; running tasks finish. Persisted, so
-- a runner that starts later honours it too, and checked in the claim
-- itself, so it holds from the pause's commit on (no notification needed).
CREATE TABLE cafmq.pauses (
  kind text NOT NULL CHECK (kind IN ('channel', 'task')),
  value text NOT NULL,
  paused_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, value)
);

-- The claim as before, under a new name; cafmq.claim below narrows its
-- task names and widens its paused channels by the pauses.
ALTER FUNCTION cafmq.claim(text, text[], text[], text[], integer, interval,
                           integer, text, text)
  RENAME TO claim_unpaused;

-- The claim, honouring the pauses. With none (the usual case) it costs one
-- probe of an empty table.
CREATE FUNCTION cafmq.claim(p_node text, p_names text[], p_channels text[],
                            p_paused text[], p_limit integer,
                            p_lease interval, p_max_lost integer,
                            p_cursor_name text, p_cursor_args text)
RETURNS TABLE(id uuid, name text, channel_name text, channel_args text,
              attempt integer, max_attempts integer, ordered boolean,
              timeout interval, deadline timestamptz, payload_json text,
              payload_bytes bytea, cursor_name text, cursor_args text,
              wait interval)
LANGUAGE plpgsql AS $$
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
  RETURN QUERY SELECT * FROM cafmq.claim_unpaused(
    p_node, p_names, p_channels, p_paused, p_limit, p_lease, p_max_lost,
    p_cursor_name, p_cursor_args);
END $$;

-- Pauses a channel name or a task name; false if it was paused already.
CREATE FUNCTION cafmq.pause(p_kind text, p_value text) RETURNS boolean
LANGUAGE plpgsql AS $$
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

-- Resumes it and wakes the runners for its ready tasks; false if it was not
-- paused.
CREATE FUNCTION cafmq.resume(p_kind text, p_value text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM cafmq.pauses p WHERE p.kind = p_kind AND p.value = p_value;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF p_kind = 'channel' THEN
    PERFORM cafmq.notify_ready(ARRAY[p_value]);
  ELSE
    PERFORM cafmq.notify_ready(ARRAY(
      SELECT DISTINCT t.channel_name FROM cafmq.tasks t
       WHERE t.state = 'pending' AND t.name = p_value));
  END IF;
  RETURN true;
END $$;
