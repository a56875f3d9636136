-- Runner sessions: fast takeover of a dead runner's tasks.
--
-- A runner registers its node name on its listening connection and holds a
-- session-level advisory lock on it for as long as that connection lives.
-- When the process dies (kill -9, abort()), PostgreSQL ends the backend and
-- the lock is free: another runner, checking every takeover interval, sees
-- the free lock, and if it is still free a grace period later (a runner
-- whose listening connection broke registers again within milliseconds),
-- expires the leases of the dead node's tasks at once instead of waiting
-- out the lease. The lease itself is not weakened:
-- attempt numbers do not change, so a late outcome of a runner that was
-- only cut off is still fenced by (id, attempt), and a runner that is alive
-- renews its leases again as soon as its keep-alive gets through.
--
-- The runner also records which of its attempts have started (a handler
-- runs, or a worker node holds it). An attempt that was only claimed ahead
-- gets its attempt back (max_attempts + 1) when it is taken over; a started
-- one counts. Both count as lost for poison detection, as a lease expiry
-- does, and only the first loss in a row gives the attempt back: the record
-- lags the starts by up to a poll of the listener, and a task that kills
-- its runner at once must still run out of attempts, or end as poison.
--
-- Sessions are tied to the server's incarnation (pg_postmaster_start_time):
-- a restart or failover ends every session at once, and the runners that
-- survive it reconnect, so the sessions of an earlier incarnation are never
-- taken over quickly; their tasks wait for their leases, as before.

CREATE TABLE cafmq.sessions (
  node text PRIMARY KEY,
  incarnation timestamptz NOT NULL,
  -- Ids of the attempts of this node that have started, as last recorded.
  started uuid[] NOT NULL DEFAULT '{}',
  -- When a check first found the session's lock free.
  suspected_at timestamptz,
  registered_at timestamptz NOT NULL DEFAULT now()
);

-- The advisory lock key of a node's session.
CREATE FUNCTION cafmq.session_key(p_node text) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$
  SELECT hashtextextended('cafmq.session' || chr(31) || p_node, 7305)
$$;

-- Expires the leases of the running tasks of p_node, whose session is gone
-- (the caller holds its lock), gives claimed-ahead attempts that never
-- started their attempt back, and forgets the session. Returns how many
-- tasks it handed back.
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
    UPDATE cafmq.tasks t
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

-- Registers p_node's session on this connection: takes its lock (false if
-- a live session holds it) and records the server's incarnation.
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

-- A runner that starts, before it claims: hands back the tasks an earlier
-- runner of the same node name left running (a configured name, reused
-- after a crash). -1: a live session holds the name.
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

-- Records which attempts of p_node have started.
CREATE FUNCTION cafmq.record_started(p_node text, p_ids uuid[]) RETURNS void
  LANGUAGE sql
  AS $$
  UPDATE cafmq.sessions SET started = p_ids WHERE node = p_node
$$;

-- Hands back the tasks of every session of this incarnation, except
-- p_node's own, whose lock was free at a check at least p_grace ago and is
-- free now (its runner is gone); a session found free the first time is
-- only marked. Forgets sessions of earlier incarnations that hold no
-- running task. Returns how many tasks it handed back. Runners call it
-- concurrently: a session another caller is checking is skipped (its lock
-- is taken).
CREATE FUNCTION cafmq.take_over(p_node text, p_grace interval)
  RETURNS integer
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
     AND NOT EXISTS (SELECT 1 FROM cafmq.tasks t
                      WHERE t.state = 'running' AND t.node = s.node)
     AND pg_try_advisory_xact_lock(cafmq.session_key(s.node));
  RETURN v_count;
END
$$;

-- A runner's graceful stop, when its bound passed with handlers that ignore
-- their cancel: their attempts' leases expire now, so that another runner
-- takes them at once; a late outcome is fenced by the next attempt.
CREATE FUNCTION cafmq.hand_back_attempts(p_ids uuid[], p_attempts integer[])
  RETURNS integer
  LANGUAGE plpgsql
  AS $$
DECLARE
  v_count integer;
  v_wake text[];
BEGIN
  WITH h AS (
    UPDATE cafmq.tasks t SET run_at = now()
      FROM unnest(p_ids, p_attempts) AS f (id, attempt)
     WHERE t.id = f.id AND t.attempt = f.attempt AND t.state = 'running'
    RETURNING t.channel_name)
  SELECT count(*), array_agg(DISTINCT h.channel_name) INTO v_count, v_wake
    FROM h;
  PERFORM cafmq.notify_ready(v_wake);
  RETURN v_count;
END
$$;
