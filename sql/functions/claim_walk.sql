-- SPDX-License-Identifier: BSD-3-Clause

-- The claim's walk over the channels (claim_ready): one task from each
-- channel with work, round-robin in key order from where the previous
-- claim's walk stopped (p_cursor_*), at most p_limit channels. From a
-- channel it takes the head of its ordered tasks if that is ready (an
-- ordered channel runs one task at a time, in order); else, when some
-- tasks have priorities (p_prio), its highest-priority ready task; else its
-- first ready task. Each is locked SKIP LOCKED: a task another claim holds
-- is left to it.
--
-- Returns the locked ids, the last channel visited (the next walk's
-- cursor), whether the walk stopped at p_limit channels (`cut`: more may
-- have work), and the channels visited when some are paused (claim_fill
-- reads only those).
CREATE OR REPLACE FUNCTION cafmq.claim_walk(
    p_names text[], p_channels text[], p_paused text[], p_limit integer,
    p_prio boolean, p_cursor_name text, p_cursor_args text,
    OUT ids uuid[], OUT cursor_name text, OUT cursor_args text,
    OUT cut boolean, OUT seen_names text[], OUT seen_args text[])
 LANGUAGE plpgsql
AS $$
DECLARE
  -- Walk bound, inclusive. (n, a || chr(1)) is the first key after (n, a)
  -- because the columns use the C collation and text holds no NUL.
  v_from_name text := coalesce(p_cursor_name, '');
  v_from_args text := coalesce(p_cursor_args || chr(1), '');
  v_wrapped boolean := p_cursor_name IS NULL;
  v_visits integer := 0;
  v_next record;
  v_head record;
  v_id uuid;
BEGIN
  ids := '{}';
  cut := false;
  cursor_name := p_cursor_name;
  cursor_args := p_cursor_args;
  seen_names := '{}';
  seen_args := '{}';
  LOOP
    IF v_visits >= p_limit THEN
      cut := true;
      EXIT;
    END IF;
    -- The next channel with work; for an unordered one also its first task
    -- by run_at, seq (the order of tasks_unordered_ready).
    SELECT c.n, c.a, c.first_id, c.first_run_at, c.first_name INTO v_next
      FROM (
      (SELECT t.channel_name AS n, t.channel_args AS a, t.id AS first_id,
              t.run_at AS first_run_at, t.name AS first_name
         FROM cafmq.tasks_live t
        WHERE t.state = 'pending' AND NOT t.ordered
          AND (t.channel_name, t.channel_args) >= (v_from_name, v_from_args)
          AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
        ORDER BY t.channel_name, t.channel_args, t.run_at, t.seq LIMIT 1)
      UNION ALL
      (SELECT t.channel_name, t.channel_args, NULL::uuid, NULL::timestamptz,
              NULL::text
         FROM cafmq.tasks_live t
        WHERE t.ordered AND t.state IN ('uncommitted', 'waiting', 'pending', 'running')
          AND (t.channel_name, t.channel_args) >= (v_from_name, v_from_args)
          AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
        ORDER BY t.channel_name, t.channel_args LIMIT 1)) c
    ORDER BY c.n, c.a LIMIT 1;
    IF NOT FOUND THEN
      EXIT WHEN v_wrapped;
      v_wrapped := true;
      v_from_name := '';
      v_from_args := '';
      CONTINUE;
    END IF;
    EXIT WHEN v_wrapped AND p_cursor_name IS NOT NULL
          AND (v_next.n, v_next.a) > (p_cursor_name, p_cursor_args);
    IF v_next.n = ANY (p_paused) THEN
      -- Paused: (n || chr(1), '') is the first key after every (n, *), so
      -- the walk passes the whole name without reading its rows.
      v_from_name := v_next.n || chr(1);
      v_from_args := '';
      CONTINUE;
    END IF;
    v_visits := v_visits + 1;
    cursor_name := v_next.n;
    cursor_args := v_next.a;
    v_from_name := v_next.n;
    v_from_args := v_next.a || chr(1);
    IF p_paused IS NOT NULL THEN
      seen_names := seen_names || v_next.n;
      seen_args := seen_args || v_next.a;
    END IF;
    -- The head: the first live ordered task. A reservation in front that
    -- expired is removed here under its row lock; if a commit holds that
    -- lock, the reservation may still become live, so the channel waits.
    LOOP
      SELECT t.id, t.state, t.run_at, t.name, t.commit_deadline INTO v_head
        FROM cafmq.tasks_live t
       WHERE t.ordered AND t.state IN ('uncommitted', 'waiting', 'pending', 'running')
         AND t.channel_name = v_next.n AND t.channel_args = v_next.a
       ORDER BY t.seq LIMIT 1;
      EXIT WHEN NOT FOUND OR v_head.state <> 'uncommitted'
             OR v_head.commit_deadline > now();
      EXIT WHEN NOT cafmq.expire_reservation(v_head.id);
    END LOOP;
    v_id := NULL;
    -- No head (NULL state), a head still uncommitted, or one that is not
    -- ready: the channel's unordered tasks may still run.
    IF v_head.state IN ('pending', 'running') AND v_head.run_at <= now()
       AND v_head.name = ANY (p_names) THEN
      -- Lock the head itself: skipping a locked head must not reach its
      -- successor.
      SELECT t.id INTO v_id FROM cafmq.tasks_live t
       WHERE t.id = v_head.id AND t.state = v_head.state AND t.run_at <= now()
       FOR UPDATE SKIP LOCKED;
    END IF;
    -- Unordered, prioritized: the channel's highest-priority ready task, a
    -- range of tasks_prioritized_ready.
    IF v_id IS NULL AND p_prio THEN
      SELECT t.id INTO v_id FROM cafmq.tasks_live t
       WHERE t.state = 'pending' AND NOT t.ordered AND t.priority > 0
         AND (t.channel_name, t.channel_args) >= (v_next.n, v_next.a)
         AND (t.channel_name, t.channel_args) <= (v_next.n, v_next.a)
         AND t.run_at <= now() AND t.name = ANY (p_names)
       ORDER BY t.channel_name, t.channel_args, t.priority DESC, t.run_at,
                t.seq LIMIT 1
       FOR UPDATE SKIP LOCKED;
    END IF;
    -- Unordered: the channel's first task if it is ready, through the
    -- primary key; else the first ready one it can lock (none if even the
    -- first task is scheduled later).
    IF v_id IS NULL AND v_next.first_id IS NOT NULL
       AND v_next.first_run_at <= now()
       AND v_next.first_name = ANY (p_names) THEN
      SELECT t.id INTO v_id FROM cafmq.tasks_live t
       WHERE t.id = v_next.first_id AND t.state = 'pending'
         AND NOT t.ordered AND t.run_at <= now()
       FOR UPDATE SKIP LOCKED;
    END IF;
    IF v_id IS NULL
       AND (v_next.first_id IS NULL OR v_next.first_run_at <= now()) THEN
      -- A range of tasks_unordered_ready, in its order. With equalities on
      -- the channel instead, a generic plan made while one channel held
      -- most ready tasks walks tasks_unordered_queue, reading the whole
      -- backlog for each channel whose tasks are behind it or locked.
      SELECT t.id INTO v_id FROM cafmq.tasks_live t
       WHERE t.state = 'pending' AND NOT t.ordered
         AND (t.channel_name, t.channel_args, t.run_at)
             >= (v_next.n, v_next.a, '-infinity')
         AND (t.channel_name, t.channel_args, t.run_at)
             <= (v_next.n, v_next.a, now())
         AND t.name = ANY (p_names)
       ORDER BY t.channel_name, t.channel_args, t.run_at, t.seq LIMIT 1
       FOR UPDATE SKIP LOCKED;
    END IF;
    IF v_id IS NOT NULL THEN
      ids := ids || v_id;
      EXIT WHEN cardinality(ids) >= p_limit;
    END IF;
  END LOOP;
END
$$;
