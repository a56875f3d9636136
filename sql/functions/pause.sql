-- SPDX-License-Identifier: BSD-3-Clause

-- Pauses a channel name or a task name; false if it was paused already.
CREATE OR REPLACE FUNCTION cafmq.pause(p_kind text, p_value text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $$
BEGIN
  IF p_kind IS NULL OR p_kind NOT IN ('channel', 'task') THEN
    RAISE EXCEPTION 'cafmq.pause: kind must be channel or task, got %', p_kind
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_value IS NULL OR octet_length(p_value) > 255 THEN
    RAISE EXCEPTION 'cafmq.pause: the % name must be at most 255 bytes (not NULL)',
      p_kind USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO cafmq.pauses (kind, value) VALUES (p_kind, p_value)
    ON CONFLICT DO NOTHING;
  RETURN FOUND;
END $$;
