-- SPDX-License-Identifier: BSD-3-Clause
-- Counts per channel and state from the views: the live states, then the
-- final ones (their totals only when $1, as they cost a scan) with the last
-- minute's throughput.
SELECT d.channel_name, d.state::text, d.tasks, d.ready,
       (extract(epoch FROM d.oldest_pending_age) * 1e6)::bigint AS oldest_us,
       0::bigint AS last_minute
  FROM cafmq.queue_depth d
UNION ALL
SELECT coalesce(f.channel_name, h.channel_name),
       coalesce(f.state, h.state)::text, coalesce(f.tasks, 0), 0, NULL,
       coalesce(h.last_minute, 0)
  FROM (SELECT * FROM cafmq.queue_totals q
         WHERE $1::boolean
           AND q.state IN ('completed', 'failed', 'cancelled')) f
  FULL JOIN cafmq.queue_throughput h
    ON h.channel_name = f.channel_name AND h.state = f.state
 ORDER BY 1, 2
