-- SPDX-License-Identifier: BSD-3-Clause

-- Extends the leases of running attempts (never shortens them). Returns the
-- attempts still owned, with their cancel flag; a missing id is lost.
--
-- It never waits for a row lock (SKIP LOCKED): a row another transaction
-- holds is being written (a completion, a failure, a checkpoint, a
-- cancel), and is returned as this statement's snapshot saw it, not
-- renewed; the next renewal renews it if it is still running. Waiting, a
-- renewal deadlocked with a completion or failure of the same attempts
-- that locked them in another order (and one of the two failed after
-- deadlock_timeout).
CREATE OR REPLACE FUNCTION cafmq.keep_alive(
    p_ids uuid[],
    p_attempts integer[],
    p_lease interval)
 RETURNS TABLE(id uuid, cancel_requested boolean)
 LANGUAGE sql
 SET plan_cache_mode TO 'force_generic_plan'
AS $$
  WITH owned AS (
    SELECT t.id, t.attempt, t.cancel_requested
      FROM cafmq.tasks_live t, unnest(p_ids, p_attempts) AS f (id, attempt)
     WHERE t.id = f.id AND t.attempt = f.attempt
       AND t.state::text = 'running'),
  free AS (
    SELECT t.id FROM cafmq.tasks_live t
     WHERE t.id IN (SELECT o.id FROM owned o) AND t.state::text = 'running'
     FOR UPDATE SKIP LOCKED),
  renewed AS (
    UPDATE cafmq.tasks_live t SET run_at = greatest(t.run_at, now() + p_lease)
      FROM free, owned o
     WHERE t.id = free.id AND o.id = free.id AND t.attempt = o.attempt
       AND t.state::text = 'running'
    RETURNING t.id, t.cancel_requested)
  SELECT r.id, r.cancel_requested FROM renewed r
  UNION ALL
  SELECT o.id, o.cancel_requested FROM owned o
   WHERE o.id NOT IN (SELECT free.id FROM free)
$$;
