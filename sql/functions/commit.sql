-- SPDX-License-Identifier: BSD-3-Clause

-- Commits two-phase reservations that have not expired; wakes runners. A
-- reservation with parents still to end waits for them.
-- Returns the ids committed now.
CREATE OR REPLACE FUNCTION cafmq.commit(p_ids uuid[])
 RETURNS SETOF uuid
 LANGUAGE plpgsql
AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
BEGIN
  WITH c AS (
    UPDATE cafmq.tasks_live t
       SET state = CASE WHEN t.parents_left > 0 THEN 'waiting'
                        ELSE 'pending' END::cafmq.task_state,
           commit_deadline = NULL
     WHERE t.id = ANY (p_ids) AND t.state = 'uncommitted'
       AND t.commit_deadline > now()
    RETURNING t.id, t.channel_name, t.state)
  SELECT array_agg(c.id),
         array_agg(c.channel_name) FILTER (WHERE c.state = 'pending')
    INTO v_done, v_wake FROM c;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;
