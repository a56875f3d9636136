-- SPDX-License-Identifier: BSD-3-Clause
-- Inserts :n finished tasks, one every :step (an interval) up to now, with
-- ids time-ordered like uuid::time_ordered (48 bits of Unix milliseconds,
-- version 7, variant 8): 92% completed, 6% failed, 2% cancelled, over four
-- names and three channels. For bench/dashboard_load.sh and
-- scripts/dashboard_screenshot.sh:
--   psql -v n=1000000 -v step="'100 ms'" -f finished_tasks.sql
WITH moved AS (
INSERT INTO cafmq.tasks_history (id, seq, name, channel_name, channel_args, state,
                         ordered, attempt, max_attempts, run_at, backoff,
                         backoff_cap, last_error, created_at, started_at,
                         finished_at, node)
SELECT (lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0')
        || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
       nextval('cafmq.task_seq'),
       (ARRAY['send_email', 'resize_image', 'charge_card', 'sync_crm'])[1 + i % 4],
       (ARRAY['mail', 'images', 'billing'])[1 + i % 3], '',
       s::cafmq.task_state, false, 1, 5, t, '1 s', '1 h',
       CASE WHEN s = 'failed' THEN 'smtp: 421 try again later' END,
       t, t + interval '5 ms', t + interval '40 ms', 'worker-' || i % 4
  FROM generate_series(1, :n) i,
       LATERAL (SELECT now() - (:n - i + 1) * interval :step AS t,
                       md5(i::text) AS h,
                       CASE WHEN i % 50 < 46 THEN 'completed'
                            WHEN i % 50 < 49 THEN 'failed'
                            ELSE 'cancelled' END AS s) x
RETURNING finished_at, channel_name, state)
-- Counted as cafmq counts what it moves (cafmq.finished_counts).
INSERT INTO cafmq.finished_counts
SELECT (finished_at AT TIME ZONE 'UTC')::date, channel_name, state, count(*)
  FROM moved GROUP BY 1, 2, 3;
