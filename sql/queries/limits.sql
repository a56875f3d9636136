-- SPDX-License-Identifier: BSD-3-Clause
-- The channel limits, with the tasks each has running (live leases) and its
-- starts inside its rate window now.
SELECT l.channel_name, l.max_running, l.rate_limit,
       (extract(epoch FROM l.rate_period) * 1e6)::bigint AS rate_period_us,
       (SELECT count(*) FROM cafmq.tasks_live t
         WHERE t.state = 'running' AND t.run_at > now()
           AND t.channel_name = l.channel_name) AS running,
       (SELECT count(*) FROM unnest(l.recent_starts) s
         WHERE s > clock_timestamp() - l.rate_period) AS recent_starts
  FROM cafmq.channel_limits l ORDER BY l.channel_name
