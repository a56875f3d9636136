-- SPDX-License-Identifier: BSD-3-Clause

-- Hands back the tasks of every session of this incarnation, except
-- p_node's own, whose lock was free at a check at least p_grace ago and is
-- free now (its runner is gone); a session found free the first time is
-- only marked. Forgets sessions of earlier incarnations that hold no
-- running task. Returns how many tasks it handed back. Runners call it
-- concurrently: a session another caller is checking is skipped (its lock
-- is taken).
CREATE OR REPLACE FUNCTION cafmq.take_over(p_node text, p_grace interval)
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
     AND NOT EXISTS (SELECT 1 FROM cafmq.tasks_live t
                      WHERE t.state = 'running' AND t.node = s.node)
     AND pg_try_advisory_xact_lock(cafmq.session_key(s.node));
  RETURN v_count;
END
$$;
