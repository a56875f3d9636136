-- SPDX-License-Identifier: BSD-3-Clause

-- A runner's graceful stop, when its bound passed with handlers that ignore
-- their cancel: their attempts' leases expire now, so that another runner
-- takes them at once; a late outcome is fenced by the next attempt.
CREATE OR REPLACE FUNCTION cafmq.hand_back_attempts(
    p_ids uuid[],
    p_attempts integer[])
 RETURNS integer
 LANGUAGE plpgsql
AS $$
DECLARE
  v_count integer;
  v_wake text[];
BEGIN
  WITH h AS (
    UPDATE cafmq.tasks_live t SET run_at = now()
      FROM unnest(p_ids, p_attempts) AS f (id, attempt)
     WHERE t.id = f.id AND t.attempt = f.attempt
       AND t.state::text = 'running'
    RETURNING t.channel_name)
  SELECT count(*), array_agg(DISTINCT h.channel_name) INTO v_count, v_wake
    FROM h;
  PERFORM cafmq.notify_ready(v_wake);
  RETURN v_count;
END
$$;
