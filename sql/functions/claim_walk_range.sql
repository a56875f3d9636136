-- SPDX-License-Identifier: BSD-3-Clause

-- The claim's walk (claim_walk) through one range of channel keys, up to
-- p_hi: unordered tasks from key p_ufrom (NULL: none left in the range),
-- ordered channels from (p_ok, p_on, p_oa). At each channel in key order
-- it takes the ordered head (claim_walk_head), else a task of the key's
-- unordered ones (claim_walk_key), unless the name is paused: then it
-- passes all the name's keys (they share their 40 high bits; a name with
-- the same 40 bits is passed too while this one is paused). It stops after
-- p_visits channels (`stopped`, visits = p_visits), at p_ids tasks
-- (`stopped`), at the first channel after (p_stop_key, p_stop_name,
-- p_stop_args) if given (`stopped`), or at the range's end.
CREATE OR REPLACE FUNCTION cafmq.claim_walk_range(
    p_hi bigint, p_ufrom bigint, p_ok bigint, p_on text, p_oa text,
    p_stop_key bigint, p_stop_name text, p_stop_args text,
    p_visits integer, p_ids integer, p_names text[], p_channels text[],
    p_paused text[], p_prio boolean,
    OUT ids uuid[], OUT visits integer, OUT last_name text,
    OUT last_args text, OUT seen_keys bigint[], OUT stopped boolean)
 LANGUAGE plpgsql
AS $$
DECLARE
  -- The next key with unordered work (v_uk NULL: none) and its first task
  -- by run_at, seq; the next ordered channel (v_ook NULL: none). Each is
  -- looked up again only once the walk has passed it.
  v_ufresh boolean := false;
  v_uk bigint;
  v_un text;
  v_ua text;
  v_uid uuid;
  v_urun timestamptz;
  v_uname text;
  v_ofresh boolean := false;
  v_ook bigint;
  v_oon text;
  v_ooa text;
  -- The channel visited.
  v_k bigint;
  v_n text;
  v_a text;
  v_id uuid;
BEGIN
  ids := '{}';
  visits := 0;
  seen_keys := '{}';
  stopped := true;
  LOOP
    EXIT WHEN visits >= p_visits OR cardinality(ids) >= p_ids;
    IF NOT v_ufresh THEN
      v_uk := NULL;
      IF p_ufrom IS NOT NULL THEN
        -- A range of tasks_unordered_ready.
        SELECT cafmq.channel_index_key(t.channel_name, t.channel_args),
               t.channel_name, t.channel_args, t.id, t.run_at, t.name
          INTO v_uk, v_un, v_ua, v_uid, v_urun, v_uname
          FROM cafmq.tasks_live t
         WHERE t.state = 'pending' AND NOT t.ordered
           AND cafmq.channel_index_key(t.channel_name, t.channel_args)
               BETWEEN p_ufrom AND p_hi
         ORDER BY cafmq.channel_index_key(t.channel_name, t.channel_args),
                  t.run_at, t.seq
         LIMIT 1;
      END IF;
      v_ufresh := true;
    END IF;
    IF NOT v_ofresh THEN
      v_ook := NULL;
      -- A range of tasks_ordered_live.
      SELECT cafmq.channel_index_key(t.channel_name, t.channel_args),
             t.channel_name, t.channel_args
        INTO v_ook, v_oon, v_ooa
        FROM cafmq.tasks_live t
       WHERE t.ordered
         AND t.state IN ('uncommitted', 'waiting', 'pending', 'running')
         AND (cafmq.channel_index_key(t.channel_name, t.channel_args),
              t.channel_name, t.channel_args) >= (p_ok, p_on, p_oa)
         AND cafmq.channel_index_key(t.channel_name, t.channel_args) <= p_hi
       ORDER BY cafmq.channel_index_key(t.channel_name, t.channel_args),
                t.channel_name, t.channel_args
       LIMIT 1;
      v_ofresh := true;
    END IF;
    IF v_ook IS NULL OR (v_uk, v_un, v_ua) < (v_ook, v_oon, v_ooa) THEN
      v_k := v_uk;
      v_n := v_un;
      v_a := v_ua;
    ELSE
      v_k := v_ook;
      v_n := v_oon;
      v_a := v_ooa;
    END IF;
    IF v_k IS NULL THEN
      stopped := false;
      EXIT;
    END IF;
    EXIT WHEN p_stop_key IS NOT NULL
          AND (v_k, v_n, v_a) > (p_stop_key, p_stop_name, p_stop_args);
    IF v_n = ANY (p_paused) THEN
      IF (v_k | 16777215) >= p_hi THEN
        stopped := false;
        EXIT;
      END IF;
      p_ufrom := CASE WHEN p_ufrom IS NOT NULL THEN (v_k | 16777215) + 1 END;
      p_ok := (v_k | 16777215) + 1;
      p_on := '';
      p_oa := '';
      v_ufresh := false;
      v_ofresh := false;
      CONTINUE;
    END IF;
    visits := visits + 1;
    last_name := v_n;
    last_args := v_a;
    v_id := NULL;
    IF (v_ook, v_oon, v_ooa) = (v_k, v_n, v_a) THEN
      v_id := cafmq.claim_walk_head(v_k, v_n, v_a, p_names);
      v_ofresh := false;
    END IF;
    IF v_uk = v_k THEN
      IF p_paused IS NOT NULL THEN
        seen_keys := seen_keys || v_k;
      END IF;
      IF v_id IS NULL THEN
        v_id := cafmq.claim_walk_key(v_k, v_uid, v_urun, v_uname, v_un,
                                     p_names, p_channels, p_paused, p_prio);
      END IF;
      p_ufrom := CASE WHEN v_k < p_hi THEN v_k + 1 END;
      v_ufresh := false;
    END IF;
    p_ok := v_k;
    p_on := v_n;
    p_oa := v_a || chr(1);
    IF v_id IS NOT NULL THEN
      ids := ids || v_id;
    END IF;
  END LOOP;
END
$$;
