-- SPDX-License-Identifier: BSD-3-Clause
-- The due schedules no other runner is firing, locked until this
-- transaction ends, with their times as wall-clock times in their zones:
-- the next tick, now, and now less the grace (older ticks were missed).
SELECT name, cron, extract(epoch FROM every)::bigint AS every_s, catch_up,
       catch_up_limit,
       (next_run_at AT TIME ZONE time_zone)::text AS next_local,
       (now() AT TIME ZONE time_zone)::text AS now_local,
       ((now() - grace) AT TIME ZONE time_zone)::text AS late_local
  FROM cafmq.schedules
 WHERE next_run_at <= now()
 ORDER BY next_run_at
 LIMIT $1::integer
   FOR UPDATE SKIP LOCKED
