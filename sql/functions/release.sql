-- SPDX-License-Identifier: BSD-3-Clause

-- Gives back attempts that were claimed but never started (a stopping
-- runner's buffer): they are pending again at once and the claim does not
-- count as an attempt. Fenced like complete. Returns the ids given back.
CREATE OR REPLACE FUNCTION cafmq.release(p_ids uuid[], p_attempts integer[])
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
BEGIN
  WITH r AS (
    UPDATE cafmq.tasks_live t
       SET state = 'pending', attempt = t.attempt - 1, run_at = now(),
           node = NULL, lost_attempts = 0
      FROM unnest(p_ids, p_attempts) AS f (id, attempt)
     WHERE t.id = f.id AND t.attempt = f.attempt
       AND t.state::text = 'running'
    RETURNING t.id, t.channel_name)
  SELECT array_agg(r.id), array_agg(r.channel_name) INTO v_done, v_wake FROM r;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;
