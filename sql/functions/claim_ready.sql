-- SPDX-License-Identifier: BSD-3-Clause

-- The claim of the channels nothing holds back (cafmq.claim calls it for
-- the channels neither paused nor limited, and claim_limited for one
-- limited channel): up to p_limit ready tasks of p_names, fairly across
-- channels. claim_walk takes one task from each channel, round-robin from
-- p_cursor_*; claim_fill fills the batch; claim_start starts them (or ends
-- those that must not run). The last row has id NULL: where the walk
-- stopped, and how long until the next task is due (0 when the walk was
-- cut short: more channels have work now).
--
-- The settings hold for the functions it calls: their plans walk the
-- indexes in the order the queries ask for, never a sort of the backlog.
--
-- It was cafmq.claim_unpaused, a name that had stopped being true
-- (migration 0014 drops that one).
CREATE OR REPLACE FUNCTION cafmq.claim_ready(
    p_node text,
    p_names text[],
    p_channels text[],
    p_paused text[],
    p_limit integer,
    p_lease interval,
    p_max_lost integer,
    p_cursor_name text,
    p_cursor_args text)
 RETURNS SETOF cafmq.claim_row
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_sort TO 'off'
 SET jit TO 'off'
AS $$
DECLARE
  v_walk record;
  v_ids uuid[];
  v_last cafmq.claim_row;
  -- Whether any ready-or-scheduled unordered task has a priority: one probe
  -- of an index that is empty while priorities are unused.
  v_prio boolean := EXISTS (
    SELECT 1 FROM cafmq.tasks_live t
     WHERE t.state = 'pending' AND NOT t.ordered AND t.priority > 0);
BEGIN
  IF p_channels = '{}' THEN
    p_channels := NULL;
  END IF;
  IF p_paused = '{}' THEN
    p_paused := NULL;
  END IF;
  SELECT * INTO v_walk FROM cafmq.claim_walk(
    p_names, p_channels, p_paused, p_limit, v_prio, p_cursor_name,
    p_cursor_args);
  v_ids := v_walk.ids;
  IF cardinality(v_ids) < p_limit THEN
    v_ids := cafmq.claim_fill(p_names, p_channels, p_paused, p_limit, v_ids,
                              v_prio, v_walk.seen_keys);
  END IF;
  RETURN QUERY SELECT * FROM cafmq.claim_start(v_ids, p_node, p_lease,
                                               p_max_lost);
  PERFORM cafmq.publish_status(v_ids);
  v_last.cursor_name := v_walk.cursor_name;
  v_last.cursor_args := v_walk.cursor_args;
  v_last.wait := CASE WHEN v_walk.cut AND cardinality(v_ids) > 0
                      THEN interval '0'
                      ELSE cafmq.claim_next_due() - now() END;
  RETURN NEXT v_last;
END
$$;
