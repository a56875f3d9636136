-- SPDX-License-Identifier: BSD-3-Clause

-- Retry by hand: a failed or cancelled task is pending again, runnable now,
-- with a fresh attempt budget and a fresh lost-lease count. Its attempt
-- number goes on counting, so an old attempt stays fenced out; its last
-- error stays. Returns one row per id asked for: 'retried', 'unknown',
-- the state a live or completed task is in, 'deadline passed', or
-- 'unique key held' (a live task holds its unique key now).
CREATE OR REPLACE FUNCTION cafmq.retry(p_ids uuid[])
 RETURNS TABLE(id uuid, outcome text)
 LANGUAGE plpgsql
AS $$
DECLARE
  v record;
  v_channels text[] := '{}';
  v_retried uuid[] := '{}';
BEGIN
  FOR v IN SELECT t.id, t.state, t.deadline, t.channel_name, t.attempt,
                  t.max_attempts, t.attempt_base
             FROM cafmq.tasks t WHERE t.id = ANY (p_ids)
            ORDER BY t.id FOR UPDATE LOOP
    id := v.id;
    IF v.state NOT IN ('failed', 'cancelled') THEN
      outcome := v.state::text;
    ELSIF v.deadline IS NOT NULL AND v.deadline <= now() THEN
      outcome := 'deadline passed';
    ELSE
      BEGIN
        UPDATE cafmq.tasks t
           SET state = 'pending', run_at = now(), finished_at = NULL,
               cancel_requested = false, lost_attempts = 0, node = NULL,
               max_attempts = v.attempt + v.max_attempts - v.attempt_base,
               attempt_base = v.attempt
         WHERE t.id = v.id;
        outcome := 'retried';
        v_channels := v_channels || v.channel_name;
        v_retried := v_retried || v.id;
      EXCEPTION WHEN unique_violation THEN
        outcome := 'unique key held';
      END;
    END IF;
    RETURN NEXT;
  END LOOP;
  RETURN QUERY SELECT u, 'unknown'::text FROM unnest(p_ids) u
                WHERE NOT EXISTS (SELECT 1 FROM cafmq.tasks t WHERE t.id = u);
  IF cardinality(v_retried) > 0 THEN
    PERFORM cafmq.notify_ready(ARRAY(SELECT DISTINCT unnest(v_channels)));
    PERFORM cafmq.publish_status(v_retried);
  END IF;
END $$;
