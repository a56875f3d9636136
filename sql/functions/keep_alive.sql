-- SPDX-License-Identifier: BSD-3-Clause

-- Extends the leases of running attempts (never shortens them). Returns the
-- attempts still owned, with their cancel flag; a missing id is lost.
CREATE OR REPLACE FUNCTION cafmq.keep_alive(
    p_ids uuid[],
    p_attempts integer[],
    p_lease interval)
 RETURNS TABLE(id uuid, cancel_requested boolean)
 LANGUAGE sql
 SET plan_cache_mode TO 'force_generic_plan'
AS $$
  UPDATE cafmq.tasks_live t SET run_at = greatest(t.run_at, now() + p_lease)
    FROM unnest(p_ids, p_attempts) AS f (id, attempt)
   WHERE t.id = f.id AND t.attempt = f.attempt AND t.state = 'running'
  RETURNING t.id, t.cancel_requested
$$;
