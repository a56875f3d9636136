-- SPDX-License-Identifier: BSD-3-Clause

-- Delay before retry number `attempt`: initial * 2^(attempt-1), at most cap.
CREATE OR REPLACE FUNCTION cafmq.retry_delay(
    p_backoff interval,
    p_cap interval,
    p_attempt integer)
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE WHEN p_attempt > 40 THEN p_cap
              ELSE least(p_cap, p_backoff * power(2, greatest(p_attempt, 1) - 1))
         END
$$;

-- Delay before retry number `attempt` with `jitter`; `draw` in [0, 1) is
-- the random part, passed in so one failure uses one draw throughout.
CREATE OR REPLACE FUNCTION cafmq.retry_delay(
    p_backoff interval,
    p_cap interval,
    p_attempt integer,
    p_jitter text,
    p_draw double precision)
 RETURNS interval
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE p_jitter
           WHEN 'full' THEN d * p_draw
           WHEN 'equal' THEN d / 2 + d / 2 * p_draw
           ELSE d
         END
    FROM cafmq.retry_delay(p_backoff, p_cap, p_attempt) AS d
$$;
