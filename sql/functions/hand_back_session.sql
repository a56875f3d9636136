-- SPDX-License-Identifier: BSD-3-Clause

-- Expires the leases of the running tasks of p_node, whose session is gone
-- (the caller holds its lock), gives claimed-ahead attempts that never
-- started their attempt back, and forgets the session. Returns how many
-- tasks it handed back.
CREATE OR REPLACE FUNCTION cafmq.hand_back_session(p_node text)
 RETURNS integer
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
    UPDATE cafmq.tasks_live t
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
