-- SPDX-License-Identifier: BSD-3-Clause

-- Saves a new payload (NULL keeps the old one) for the next attempt, adds
-- attempts, and optionally extends the lease. During the final attempt it
-- only grants a retry when p_extra_attempts > 0.
CREATE OR REPLACE FUNCTION cafmq.checkpoint(
    p_id uuid,
    p_attempt integer,
    p_json text,
    p_bytes bytea,
    p_extra_attempts integer,
    p_lease interval)
 RETURNS boolean
 LANGUAGE plpgsql
AS $$
BEGIN
  UPDATE cafmq.tasks_live t
     SET max_attempts = t.max_attempts + greatest(coalesce(p_extra_attempts, 0), 0),
         run_at = CASE WHEN p_lease IS NULL THEN t.run_at
                       ELSE greatest(t.run_at, now() + p_lease) END,
         lost_attempts = 0,
         payload_json = coalesce(p_json::jsonb, t.payload_json),
         payload_bytes = coalesce(p_bytes, t.payload_bytes)
   WHERE t.id = p_id AND t.attempt = p_attempt AND t.state = 'running';
  RETURN FOUND;
END
$$;
