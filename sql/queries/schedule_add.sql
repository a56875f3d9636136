-- SPDX-License-Identifier: BSD-3-Clause
-- Adds or replaces a schedule. Its next tick: $9, a wall-clock time in zone
-- $5 (cron), else the next multiple of $4 seconds since the epoch. A
-- replacement with the same timing keeps its next tick.
INSERT INTO cafmq.schedules AS s
    (name, spec, cron, every, time_zone, catch_up, catch_up_limit, grace,
     next_run_at)
  VALUES ($1::text, $2::jsonb, $3::text, make_interval(secs => $4::bigint),
          $5::text, $6::text, $7::integer, make_interval(secs => $8::bigint),
          coalesce($9::timestamp AT TIME ZONE $5::text,
                   to_timestamp(ceil(extract(epoch FROM now()) / $4::bigint)
                                * $4::bigint)))
  ON CONFLICT (name) DO UPDATE
    SET spec = EXCLUDED.spec, cron = EXCLUDED.cron, every = EXCLUDED.every,
        time_zone = EXCLUDED.time_zone, catch_up = EXCLUDED.catch_up,
        catch_up_limit = EXCLUDED.catch_up_limit, grace = EXCLUDED.grace,
        next_run_at = CASE
          WHEN (s.cron, s.every, s.time_zone)
               IS NOT DISTINCT FROM (EXCLUDED.cron, EXCLUDED.every,
                                     EXCLUDED.time_zone)
          THEN s.next_run_at ELSE EXCLUDED.next_run_at END,
        last_error = NULL
