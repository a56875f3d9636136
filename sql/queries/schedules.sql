-- SPDX-License-Identifier: BSD-3-Clause
SELECT name, spec->>'name' AS task_name, cron,
       extract(epoch FROM every)::bigint AS every_s, time_zone, catch_up,
       catch_up_limit, extract(epoch FROM grace)::bigint AS grace_s,
       extract(epoch FROM next_run_at) * 1e6 AS next_us,
       extract(epoch FROM last_tick_at) * 1e6 AS last_tick_us, ticks, missed,
       last_error
  FROM cafmq.schedules ORDER BY name
