-- SPDX-License-Identifier: BSD-3-Clause

-- The claim, honouring the pauses and the channel limits. With neither (the
-- usual case) it costs two probes of empty tables.
--
-- A limited channel is left out of the ordinary claim. Each one this claim
-- may serve is locked (SKIP LOCKED: a channel another claim holds is left to
-- it), its free slots counted from the running tasks and the starts in its
-- window, and claimed on its own up to them, before the ordinary claim
-- fills what is left of the batch. The lock is held until the claim
-- commits, so the next claim of that channel counts what this one started.
-- Tasks a claim ends instead of running come back with `ended` and `error`
-- (see claim_unpaused).
--
-- The columns ended and error are new: a new return type needs a DROP.
DROP FUNCTION IF EXISTS cafmq.claim(text, text[], text[], text[], integer,
    interval, integer, text, text);
CREATE FUNCTION cafmq.claim(
    p_node text,
    p_names text[],
    p_channels text[],
    p_paused text[],
    p_limit integer,
    p_lease interval,
    p_max_lost integer,
    p_cursor_name text,
    p_cursor_args text)
 RETURNS TABLE(
    id uuid,
    name text,
    channel_name text,
    channel_args text,
    attempt integer,
    max_attempts integer,
    ordered boolean,
    timeout interval,
    deadline timestamp with time zone,
    payload_json text,
    payload_bytes bytea,
    cursor_name text,
    cursor_args text,
    wait interval,
    ended text,
    error text)
 LANGUAGE plpgsql
AS $$
DECLARE
  v_limit record;
  v_row record;
  v_slots integer;
  v_taken integer;
  v_recent timestamptz[];
  v_cursor text;
  -- When a limited channel with ready tasks may have a free slot again.
  v_wait interval;
  -- The time of the starts this claim records: read once the channel's row
  -- is locked, so the starts of a channel are recorded in lock order and its
  -- window never drops a start a later claim's window still holds.
  v_now timestamptz;
BEGIN
  IF EXISTS (SELECT 1 FROM cafmq.pauses) THEN
    p_names := ARRAY(SELECT n FROM unnest(p_names) n
                      WHERE NOT EXISTS (SELECT 1 FROM cafmq.pauses p
                                         WHERE p.kind = 'task'
                                           AND p.value = n));
    p_paused := coalesce(p_paused, '{}')
                || ARRAY(SELECT p.value FROM cafmq.pauses p
                          WHERE p.kind = 'channel');
  END IF;
  IF EXISTS (SELECT 1 FROM cafmq.channel_limits) THEN
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
          SELECT count(*) FROM cafmq.tasks t
           WHERE t.state = 'running' AND t.run_at > now()
             AND t.channel_name = v_limit.channel_name)::integer);
      END IF;
      v_recent := '{}';
      IF v_limit.rate_limit IS NOT NULL THEN
        v_recent := ARRAY(SELECT s FROM unnest(v_limit.recent_starts) s
                           WHERE s > v_now - v_limit.rate_period ORDER BY s);
        v_slots := least(v_slots,
                         v_limit.rate_limit - cardinality(v_recent));
      END IF;
      v_taken := 0;
      v_cursor := v_limit.cursor_args;
      IF v_slots > 0 THEN
        FOR v_row IN
          SELECT * FROM cafmq.claim_unpaused(
            p_node, p_names, ARRAY[v_limit.channel_name::text], NULL, v_slots,
            p_lease, p_max_lost,
            CASE WHEN v_limit.cursor_args IS NOT NULL
                 THEN v_limit.channel_name::text END,
            v_limit.cursor_args) c
        LOOP
          IF v_row.id IS NULL THEN
            v_cursor := v_row.cursor_args;
            CONTINUE;
          END IF;
          -- A task the claim ended takes no slot.
          IF v_row.ended IS NULL THEN
            v_taken := v_taken + 1;
          END IF;
          id := v_row.id; name := v_row.name;
          channel_name := v_row.channel_name;
          channel_args := v_row.channel_args; attempt := v_row.attempt;
          max_attempts := v_row.max_attempts; ordered := v_row.ordered;
          timeout := v_row.timeout; deadline := v_row.deadline;
          payload_json := v_row.payload_json;
          payload_bytes := v_row.payload_bytes;
          cursor_name := NULL; cursor_args := NULL; wait := NULL;
          ended := v_row.ended; error := v_row.error;
          RETURN NEXT;
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
           SELECT 1 FROM cafmq.tasks t
            WHERE t.state = 'pending' AND t.run_at <= now()
              AND t.channel_name = v_limit.channel_name
              AND t.name = ANY (p_names)) THEN
        -- Ready tasks wait for a slot. A start leaving the window frees one
        -- at a known time; a running task may end at any time (and its
        -- completion notifies nobody), so look again soon.
        v_wait := least(v_wait, greatest(interval '10 ms', least(
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
    -- Every limited channel stays out of the ordinary claim, those another
    -- claim holds included.
    p_paused := coalesce(p_paused, '{}')
                || ARRAY(SELECT l.channel_name::text FROM cafmq.channel_limits l);
  END IF;
  IF p_limit <= 0 THEN
    id := NULL; name := NULL; channel_name := NULL; channel_args := NULL;
    attempt := NULL; max_attempts := NULL; ordered := NULL; timeout := NULL;
    deadline := NULL; payload_json := NULL; payload_bytes := NULL;
    cursor_name := p_cursor_name; cursor_args := p_cursor_args;
    wait := interval '0'; ended := NULL; error := NULL;
    RETURN NEXT;
    RETURN;
  END IF;
  RETURN QUERY SELECT c.id, c.name, c.channel_name, c.channel_args, c.attempt,
                      c.max_attempts, c.ordered, c.timeout, c.deadline,
                      c.payload_json, c.payload_bytes, c.cursor_name,
                      c.cursor_args,
                      CASE WHEN c.id IS NULL THEN least(c.wait, v_wait)
                           ELSE c.wait END,
                      c.ended, c.error
                 FROM cafmq.claim_unpaused(
                   p_node, p_names, p_channels, p_paused, p_limit, p_lease,
                   p_max_lost, p_cursor_name, p_cursor_args) c;
END $$;
