-- SPDX-License-Identifier: BSD-3-Clause

-- The limited channels' part of a claim (cafmq.claim): each limited channel
-- this claim may serve is locked (SKIP LOCKED: a channel another claim
-- holds is left to it), its free slots counted from its running tasks and
-- the starts in its window, and claimed on its own (claim_ready over that
-- one channel) up to them, p_limit tasks at most in all. The lock is held
-- until the claim commits, so the next claim of that channel counts what
-- this one started. The channel's row keeps its starts in the window and
-- where its own walk over its argument sets stopped.
--
-- Returns the claimed (and ended) tasks, then a row with id NULL whose
-- `wait` is when a limited channel with ready tasks may have a free slot
-- again (NULL: none waits for one).
CREATE OR REPLACE FUNCTION cafmq.claim_limited(
    p_node text,
    p_names text[],
    p_channels text[],
    p_paused text[],
    p_limit integer,
    p_lease interval,
    p_max_lost integer)
 RETURNS SETOF cafmq.claim_row
 LANGUAGE plpgsql
AS $$
DECLARE
  v_limit record;
  v_row cafmq.claim_row;
  v_last cafmq.claim_row;
  v_slots integer;
  v_taken integer;
  v_recent timestamptz[];
  v_cursor text;
  -- The time of the starts this claim records: read once the channel's row
  -- is locked, so the starts of a channel are recorded in lock order and its
  -- window never drops a start a later claim's window still holds.
  v_now timestamptz;
BEGIN
  FOR v_limit IN
    SELECT l.* FROM cafmq.channel_limits l
     WHERE (p_channels IS NULL OR p_channels = '{}'
            OR l.channel_name = ANY (p_channels))
       AND (p_paused IS NULL OR l.channel_name <> ALL (p_paused))
     ORDER BY l.channel_name
     FOR UPDATE SKIP LOCKED
  LOOP
    v_slots := p_limit;
    v_now := clock_timestamp();
    IF v_limit.max_running IS NOT NULL THEN
      v_slots := least(v_slots, v_limit.max_running - (
        SELECT count(*) FROM cafmq.tasks_live t
         WHERE t.state = 'running' AND t.run_at > now()
           AND t.channel_name = v_limit.channel_name)::integer);
    END IF;
    v_recent := '{}';
    IF v_limit.rate_limit IS NOT NULL THEN
      v_recent := ARRAY(SELECT s FROM unnest(v_limit.recent_starts) s
                         WHERE s > v_now - v_limit.rate_period ORDER BY s);
      v_slots := least(v_slots, v_limit.rate_limit - cardinality(v_recent));
    END IF;
    v_taken := 0;
    v_cursor := v_limit.cursor_args;
    IF v_slots > 0 THEN
      FOR v_row IN
        SELECT * FROM cafmq.claim_ready(
          p_node, p_names, ARRAY[v_limit.channel_name::text], NULL, v_slots,
          p_lease, p_max_lost,
          CASE WHEN v_limit.cursor_args IS NOT NULL
               THEN v_limit.channel_name::text END,
          v_limit.cursor_args)
      LOOP
        IF v_row.id IS NULL THEN
          v_cursor := v_row.cursor_args;
          CONTINUE;
        END IF;
        -- A task the claim ended takes no slot.
        IF v_row.ended IS NULL THEN
          v_taken := v_taken + 1;
        END IF;
        RETURN NEXT v_row;
      END LOOP;
      p_limit := p_limit - v_taken;
    END IF;
    -- The starts inside the window, this claim's included.
    IF v_limit.rate_limit IS NOT NULL THEN
      v_recent := v_recent || array_fill(v_now, ARRAY[v_taken]);
    END IF;
    IF v_taken > 0 OR v_cursor IS DISTINCT FROM v_limit.cursor_args
       OR v_recent IS DISTINCT FROM v_limit.recent_starts THEN
      UPDATE cafmq.channel_limits l
         SET recent_starts = v_recent, cursor_args = v_cursor
       WHERE l.channel_name = v_limit.channel_name;
    END IF;
    IF v_taken >= v_slots AND EXISTS (
         SELECT 1 FROM cafmq.tasks_live t
          WHERE t.state = 'pending' AND t.run_at <= now()
            AND t.channel_name = v_limit.channel_name
            AND t.name = ANY (p_names)) THEN
      -- Ready tasks wait for a slot. A start leaving the window frees one
      -- at a known time; a running task may end at any time (and its
      -- completion notifies nobody), so look again soon.
      v_last.wait := least(v_last.wait, greatest(interval '10 ms', least(
        CASE WHEN v_limit.rate_limit IS NOT NULL
                  AND cardinality(v_recent) >= v_limit.rate_limit
             THEN v_recent[cardinality(v_recent) - v_limit.rate_limit + 1]
                  + v_limit.rate_period - v_now
        END,
        CASE WHEN v_limit.max_running IS NOT NULL THEN interval '200 ms'
        END)));
    END IF;
    EXIT WHEN p_limit <= 0;
  END LOOP;
  RETURN NEXT v_last;
END $$;
