-- SPDX-License-Identifier: BSD-3-Clause

-- The claim: what a runner calls to take work. Its files, in the order a
-- claim runs them:
--   claim.sql           pauses, then the limited channels, then the rest
--   claim_pauses.sql    what the cluster-wide pauses leave the claim
--   claim_limited.sql   each limited channel, up to its free slots
--   claim_ready.sql     the channels nothing holds back:
--     claim_walk.sql      one task from each channel, round-robin in key
--                         order, one range of keys at a time:
--       claim_walk_range.sql  the channels of a range, in key order
--       claim_walk_head.sql   an ordered channel's head
--       claim_walk_key.sql    a task of a key's unordered ones
--     claim_fill.sql      prioritized tasks, lost attempts, queue order
--     claim_start.sql     the chosen tasks start, or end if they must not run
--     claim_next_due.sql  when the next task is due
--   claim_ids.sql       the claim by id: tasks a spawn's notification named
--
-- Up to p_limit tasks of the names p_names (and, if given, of the channels
-- p_channels; none of p_paused). Each claimed task is running with a new
-- attempt and a lease of p_lease; a task whose lease lapsed more than
-- p_max_lost times ends as poison. p_cursor_* is where the previous claim's
-- walk over the channels stopped. Rows: see cafmq.claim_row (migration
-- 0014). With no pause and no limit (the usual case) this costs two probes
-- of empty tables.
CREATE OR REPLACE FUNCTION cafmq.claim(
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
AS $$
DECLARE
  v_row cafmq.claim_row;
  -- When a limited channel with ready tasks may have a free slot again.
  v_wait interval;
BEGIN
  IF EXISTS (SELECT 1 FROM cafmq.pauses) THEN
    SELECT x.names, x.paused INTO p_names, p_paused
      FROM cafmq.claim_pauses(p_names, p_paused) x;
  END IF;
  IF EXISTS (SELECT 1 FROM cafmq.channel_limits) THEN
    FOR v_row IN
      SELECT * FROM cafmq.claim_limited(p_node, p_names, p_channels, p_paused,
                                        p_limit, p_lease, p_max_lost)
    LOOP
      IF v_row.id IS NULL THEN
        v_wait := v_row.wait;
        CONTINUE;
      END IF;
      -- A task the claim ended takes no slot of the batch.
      IF v_row.ended IS NULL THEN
        p_limit := p_limit - 1;
      END IF;
      RETURN NEXT v_row;
    END LOOP;
    -- Every limited channel stays out of the rest of the claim, those
    -- another claim holds included.
    p_paused := coalesce(p_paused, '{}')
                || ARRAY(SELECT l.channel_name::text FROM cafmq.channel_limits l);
  END IF;
  IF p_limit <= 0 THEN
    v_row := NULL;
    v_row.cursor_name := p_cursor_name;
    v_row.cursor_args := p_cursor_args;
    v_row.wait := interval '0';
    RETURN NEXT v_row;
    RETURN;
  END IF;
  IF v_wait IS NULL THEN
    RETURN QUERY SELECT * FROM cafmq.claim_ready(
      p_node, p_names, p_channels, p_paused, p_limit, p_lease, p_max_lost,
      p_cursor_name, p_cursor_args);
    RETURN;
  END IF;
  FOR v_row IN
    SELECT * FROM cafmq.claim_ready(
      p_node, p_names, p_channels, p_paused, p_limit, p_lease, p_max_lost,
      p_cursor_name, p_cursor_args)
  LOOP
    IF v_row.id IS NULL THEN
      v_row.wait := least(v_row.wait, v_wait);
    END IF;
    RETURN NEXT v_row;
  END LOOP;
END $$;
