-- SPDX-License-Identifier: BSD-3-Clause

-- Completes the given attempts. Fenced: an attempt that is no longer current
-- (re-claimed, finished, cleared) changes nothing. Returns the ids completed.
CREATE OR REPLACE FUNCTION cafmq.complete(p_ids uuid[], p_attempts integer[])
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
BEGIN
  WITH done AS (
    UPDATE cafmq.tasks t
       SET state = 'completed', finished_at = now(), lost_attempts = 0
      FROM unnest(p_ids, p_attempts) AS f (id, attempt)
     WHERE t.id = f.id AND t.attempt = f.attempt AND t.state = 'running'
    RETURNING t.id, t.channel_name, t.ordered)
  SELECT array_agg(done.id),
         array_agg(done.channel_name) FILTER (WHERE done.ordered)
    INTO v_done, v_wake FROM done;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;

-- Completes the given attempts like complete(p_ids, p_attempts), storing
-- each one's result (what its handler passed to complete()) in the same
-- statement.
CREATE OR REPLACE FUNCTION cafmq.complete(
    p_ids uuid[],
    p_attempts integer[],
    p_results jsonb[])
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $$
DECLARE
  v_done uuid[];
  v_wake text[];
BEGIN
  WITH done AS (
    UPDATE cafmq.tasks t
       SET state = 'completed', finished_at = now(), lost_attempts = 0,
           result = f.result
      FROM unnest(p_ids, p_attempts, p_results) AS f (id, attempt, result)
     WHERE t.id = f.id AND t.attempt = f.attempt AND t.state = 'running'
    RETURNING t.id, t.channel_name, t.ordered)
  SELECT array_agg(done.id),
         array_agg(done.channel_name) FILTER (WHERE done.ordered)
    INTO v_done, v_wake FROM done;
  PERFORM cafmq.notify_ready(v_wake);
  PERFORM cafmq.publish_status(v_done);
  RETURN QUERY SELECT unnest(v_done);
END
$$;
