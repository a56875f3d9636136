-- SPDX-License-Identifier: BSD-3-Clause

-- Commits two-phase reservations that have not expired; wakes runners.
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
    UPDATE cafmq.tasks_live t SET state = 'pending', commit_deadline = NULL
     WHERE t.id = ANY (p_ids) AND t.state = 'uncommitted'
       AND t.commit_deadline > now()
    RETURNING t.id, t.channel_name)
  SELECT array_agg(c.id), array_agg(c.channel_name) INTO v_done, v_wake FROM c;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;
