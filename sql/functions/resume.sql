-- SPDX-License-Identifier: BSD-3-Clause

-- Resumes a paused channel name or task name and wakes the runners for its
-- ready tasks; false if it was not paused.
CREATE OR REPLACE FUNCTION cafmq.resume(p_kind text, p_value text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $$
BEGIN
  DELETE FROM cafmq.pauses p WHERE p.kind = p_kind AND p.value = p_value;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF p_kind = 'channel' THEN
    PERFORM cafmq.notify_ready(ARRAY[p_value]);
  ELSE
    PERFORM cafmq.notify_ready(ARRAY(
      SELECT DISTINCT t.channel_name FROM cafmq.tasks_live t
       WHERE t.state = 'pending' AND t.name = p_value));
  END IF;
  RETURN true;
END $$;
