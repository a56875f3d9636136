-- SPDX-License-Identifier: BSD-3-Clause

-- The claim's walk over the channels (claim_ready): one task from each
-- channel with work, round-robin in the order of the channels' 8-byte keys
-- (cafmq.channel_index_key, migration 0023) from where the previous
-- claim's walk stopped (p_cursor_*), at most p_limit channels. From a
-- channel it takes the head of its ordered tasks if that is ready
-- (claim_walk_head), else one of its unordered tasks (claim_walk_key).
-- Each is locked SKIP LOCKED: a task another claim holds is left to it.
--
-- The unordered tasks of a key are one turn, whichever channels share it
-- (their text is compared where a task is taken); an ordered channel is
-- visited by its (key, name, args). With p_channels, the walk reads only
-- the key ranges of those names (a name's keys share their 40 high bits),
-- each in turn (claim_walk_range).
--
-- Returns the locked ids, the last channel visited (the next walk's
-- cursor), whether the walk stopped at p_limit channels (`cut`: more may
-- have work), and the keys visited when some names are paused (claim_fill
-- reads only those).
CREATE OR REPLACE FUNCTION cafmq.claim_walk(
    p_names text[], p_channels text[], p_paused text[], p_limit integer,
    p_prio boolean, p_cursor_name text, p_cursor_args text,
    OUT ids uuid[], OUT cursor_name text, OUT cursor_args text,
    OUT cut boolean, OUT seen_keys bigint[])
 LANGUAGE plpgsql
AS $$
DECLARE
  c_max constant bigint := 9223372036854775807;
  -- The key ranges, in key order: one per name of p_channels, or all keys.
  v_lo bigint[] := ARRAY[-c_max - 1];
  v_hi bigint[] := ARRAY[c_max];
  v_seg integer := 1;
  v_ckey bigint;
  -- Where the walk starts in the range: unordered tasks from key v_ufrom
  -- (NULL: none left), ordered channels from (v_ok, v_on, v_oa), where
  -- (n, a || chr(1)) is the first text pair after (n, a): the columns use
  -- the C collation and text holds no NUL.
  v_ufrom bigint;
  v_ok bigint;
  v_on text := '';
  v_oa text := '';
  -- Whether the walk has gone past the last range to the first again;
  -- from then on it stops at the cursor.
  v_wrapped boolean := p_cursor_name IS NULL;
  v_visits integer := 0;
  v_part record;
BEGIN
  ids := '{}';
  cut := false;
  cursor_name := p_cursor_name;
  cursor_args := p_cursor_args;
  seen_keys := '{}';
  IF p_channels IS NOT NULL THEN
    SELECT array_agg(b ORDER BY b), array_agg(b | 16777215 ORDER BY b)
      INTO v_lo, v_hi
      FROM (SELECT DISTINCT hashtextextended(c, 7305) & -16777216 AS b
              FROM unnest(p_channels) c) x;
  END IF;
  v_ufrom := v_lo[1];
  v_ok := v_lo[1];
  IF p_cursor_name IS NOT NULL THEN
    -- Just after the cursor, in the range that holds it or the next.
    v_ckey := cafmq.channel_index_key(p_cursor_name, p_cursor_args);
    WHILE v_seg <= cardinality(v_hi) AND v_hi[v_seg] < v_ckey LOOP
      v_seg := v_seg + 1;
    END LOOP;
    IF v_seg > cardinality(v_hi) THEN
      v_seg := 1;
      v_wrapped := true;
    ELSIF v_lo[v_seg] > v_ckey THEN
      v_ufrom := v_lo[v_seg];
      v_ok := v_lo[v_seg];
    ELSE
      v_ufrom := CASE WHEN v_ckey < v_hi[v_seg] THEN v_ckey + 1 END;
      v_ok := v_ckey;
      v_on := p_cursor_name;
      v_oa := p_cursor_args || chr(1);
    END IF;
  END IF;
  LOOP
    SELECT * INTO v_part FROM cafmq.claim_walk_range(
      v_hi[v_seg], v_ufrom, v_ok, v_on, v_oa,
      CASE WHEN v_wrapped THEN v_ckey END, p_cursor_name, p_cursor_args,
      p_limit - v_visits, p_limit - cardinality(ids), p_names, p_channels,
      p_paused, p_prio);
    ids := ids || v_part.ids;
    seen_keys := seen_keys || v_part.seen_keys;
    v_visits := v_visits + v_part.visits;
    IF v_part.visits > 0 THEN
      cursor_name := v_part.last_name;
      cursor_args := v_part.last_args;
    END IF;
    IF v_visits >= p_limit AND cardinality(ids) < p_limit THEN
      cut := true;
    END IF;
    EXIT WHEN v_part.stopped;
    -- The next range, or the first again.
    v_seg := v_seg + 1;
    IF v_seg > cardinality(v_lo) THEN
      EXIT WHEN v_wrapped;
      v_wrapped := true;
      v_seg := 1;
    END IF;
    v_ufrom := v_lo[v_seg];
    v_ok := v_lo[v_seg];
    v_on := '';
    v_oa := '';
  END LOOP;
END
$$;
