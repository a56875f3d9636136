-- SPDX-License-Identifier: BSD-3-Clause
-- One sample of the queue (cafmq::sample_queue, the dashboard's charts): the
-- database's clock; the live counts per channel and state from
-- cafmq.queue_depth; and per final state the tasks that finished from the
-- first of the bounds $1 (microseconds since the epoch, ascending) up to
-- the clock, by window: window i (in `ready`) runs from bound i to bound
-- i + 1, the last to the clock. A range of the history's index on
-- finished_at; no scan of the finished tasks.
WITH b AS (
  SELECT array_agg(timestamptz 'epoch' + x * interval '1 microsecond'
                   ORDER BY x) AS bounds
    FROM unnest($1::bigint[]) x)
SELECT 'clock' AS kind, NULL::text AS channel_name, NULL::text AS state,
       (extract(epoch FROM now()) * 1e6)::bigint AS tasks, 0::bigint AS ready,
       NULL::bigint AS oldest_us
UNION ALL
SELECT 'live', d.channel_name, d.state::text, d.tasks, d.ready,
       (extract(epoch FROM d.oldest_pending_age) * 1e6)::bigint
  FROM cafmq.queue_depth d
UNION ALL
SELECT 'finished', NULL, t.state::text, count(*),
       width_bucket(t.finished_at, b.bounds)::bigint, NULL
  FROM cafmq.tasks_history t, b
 WHERE t.finished_at >= b.bounds[1]
   AND t.finished_at <= now()
 GROUP BY t.state, width_bucket(t.finished_at, b.bounds)
