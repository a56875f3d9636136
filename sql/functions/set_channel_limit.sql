-- SPDX-License-Identifier: BSD-3-Clause

-- Sets (or replaces) a channel's limits; NULLs leave that limit off.
CREATE OR REPLACE FUNCTION cafmq.set_channel_limit(
    p_channel text,
    p_max_running integer,
    p_rate_limit integer,
    p_rate_period interval)
 RETURNS void
 LANGUAGE plpgsql
AS $$
BEGIN
  IF p_channel IS NULL OR octet_length(p_channel) > 255 THEN
    RAISE EXCEPTION 'cafmq.set_channel_limit: the channel name must be at most 255 bytes (not NULL)'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_max_running IS NULL AND p_rate_limit IS NULL THEN
    RAISE EXCEPTION 'cafmq.set_channel_limit: set max_running, a rate limit or both'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF p_max_running < 1 THEN
    RAISE EXCEPTION 'cafmq.set_channel_limit: max_running must be at least 1, got %',
      p_max_running USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF (p_rate_limit IS NULL) <> (p_rate_period IS NULL)
     OR p_rate_limit NOT BETWEEN 1 AND 100000
     OR p_rate_period <= interval '0' THEN
    RAISE EXCEPTION 'cafmq.set_channel_limit: a rate limit is 1 to 100000 starts per positive period'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  INSERT INTO cafmq.channel_limits AS l
      (channel_name, max_running, rate_limit, rate_period)
    VALUES (p_channel, p_max_running, p_rate_limit, p_rate_period)
    ON CONFLICT (channel_name) DO UPDATE
      SET max_running = EXCLUDED.max_running,
          rate_limit = EXCLUDED.rate_limit,
          rate_period = EXCLUDED.rate_period;
  -- A raised limit may free slots.
  PERFORM cafmq.notify_ready(ARRAY[p_channel]);
END $$;
