-- SPDX-License-Identifier: BSD-3-Clause

-- Fills a claim's batch after the walk over the channels (claim_ready):
-- p_ids, the walk's tasks, plus up to p_limit - cardinality(p_ids) more,
-- first prioritized tasks of any channel (when p_prio), then unordered
-- tasks whose lease lapsed (their runner is gone), then ready tasks in
-- queue order. Each is locked SKIP LOCKED. With channels paused, the queue
-- order covers only the channel keys the walk visited (p_seen_keys).
CREATE OR REPLACE FUNCTION cafmq.claim_fill(
    p_names text[], p_channels text[], p_paused text[], p_limit integer,
    p_ids uuid[], p_prio boolean, p_seen_keys bigint[])
 RETURNS uuid[]
 LANGUAGE plpgsql
AS $$
DECLARE
  v_ids uuid[] := p_ids;
BEGIN
  -- Prioritized tasks of any channel, highest first
  -- (tasks_prioritized_queue), before the queue order fills the batch.
  IF p_prio AND cardinality(v_ids) < p_limit THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.state = 'pending' AND NOT t.ordered AND t.priority > 0
         AND t.run_at <= now() AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
         AND t.id <> ALL (v_ids)
       ORDER BY t.priority DESC, t.run_at, t.seq
       LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  END IF;
  -- Unordered tasks whose lease expired: a lost attempt.
  IF cardinality(v_ids) < p_limit THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.state = 'running' AND NOT t.ordered AND t.run_at <= now()
         AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
       ORDER BY t.run_at LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  END IF;
  -- The queue order.
  IF cardinality(v_ids) < p_limit AND p_paused IS NULL THEN
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.state = 'pending' AND NOT t.ordered AND t.run_at <= now()
         AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND t.id <> ALL (v_ids)
       ORDER BY t.run_at, t.seq LIMIT p_limit - cardinality(v_ids)
       FOR UPDATE SKIP LOCKED);
  ELSIF cardinality(v_ids) < p_limit THEN
    -- Some channels paused: queue order over the keys the walk visited
    -- (every active one unless the walk was cut), each read through its
    -- own index range. Filtering the whole queue instead would read every
    -- task of a paused backlog, in every claim. The lock re-checks the
    -- state: another claim may have taken a task since it was read.
    v_ids := v_ids || ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.id = ANY (ARRAY(
               SELECT c.id FROM unnest(p_seen_keys) AS s (k)
               CROSS JOIN LATERAL (
                 -- A range of tasks_unordered_ready, as in the walk.
                 SELECT x.id, x.run_at, x.seq FROM cafmq.tasks_live x
                  WHERE x.state = 'pending' AND NOT x.ordered
                    AND (cafmq.channel_index_key(x.channel_name,
                                                 x.channel_args), x.run_at)
                        >= (s.k, '-infinity')
                    AND (cafmq.channel_index_key(x.channel_name,
                                                 x.channel_args), x.run_at)
                        <= (s.k, now())
                    AND x.name = ANY (p_names) AND x.id <> ALL (v_ids)
                    AND (p_channels IS NULL
                         OR x.channel_name = ANY (p_channels))
                    AND x.channel_name <> ALL (p_paused)
                  ORDER BY cafmq.channel_index_key(x.channel_name,
                                                   x.channel_args),
                           x.run_at, x.seq
                  LIMIT p_limit - cardinality(v_ids)) c
               ORDER BY c.run_at, c.seq LIMIT p_limit - cardinality(v_ids)))
         AND t.state = 'pending' AND NOT t.ordered AND t.run_at <= now()
       FOR UPDATE SKIP LOCKED);
  END IF;
  RETURN v_ids;
END
$$;
