-- SPDX-License-Identifier: BSD-3-Clause

-- Registers p_node's session on this connection: takes its lock (false if
-- a live session holds it) and records the server's incarnation.
CREATE OR REPLACE FUNCTION cafmq.register_session(p_node text)
 RETURNS boolean
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
