-- SPDX-License-Identifier: BSD-3-Clause

-- A runner that starts, before it claims: hands back the tasks an earlier
-- runner of the same node name left running (a configured name, reused
-- after a crash). -1: a live session holds the name.
CREATE OR REPLACE FUNCTION cafmq.hand_back_leftovers(p_node text)
 RETURNS integer
 LANGUAGE plpgsql
AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(cafmq.session_key(p_node)) THEN
    RETURN -1;
  END IF;
  RETURN cafmq.hand_back_session(p_node);
END
$$;
