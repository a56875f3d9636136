-- SPDX-License-Identifier: BSD-3-Clause

-- The claim's walk at a key with unordered tasks (claim_walk): one ready
-- task of it, locked SKIP LOCKED (a task another claim holds is left to
-- it), NULL if none. When some tasks have priorities (p_prio), the key's
-- highest-priority ready task; else its first task (p_first_*, read by the
-- walk) through the primary key if it is ready; else the first ready one
-- it can lock. None if even the first task is scheduled later. The text of
-- a task's channel is checked (p_channels, p_paused): channels that share
-- the key share its turn.
CREATE OR REPLACE FUNCTION cafmq.claim_walk_key(
    p_key bigint, p_first_id uuid, p_first_run_at timestamptz,
    p_first_name text, p_first_channel text, p_names text[],
    p_channels text[], p_paused text[], p_prio boolean)
 RETURNS uuid
 LANGUAGE plpgsql
AS $$
DECLARE
  v_id uuid;
BEGIN
  -- A range of tasks_prioritized_ready.
  IF p_prio THEN
    SELECT t.id INTO v_id FROM cafmq.tasks_live t
     WHERE t.state = 'pending' AND NOT t.ordered AND t.priority > 0
       AND cafmq.channel_index_key(t.channel_name, t.channel_args) = p_key
       AND t.run_at <= now() AND t.name = ANY (p_names)
       AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
       AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
     ORDER BY cafmq.channel_index_key(t.channel_name, t.channel_args),
              t.priority DESC, t.run_at, t.seq
     LIMIT 1
     FOR UPDATE SKIP LOCKED;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
  END IF;
  IF p_first_run_at > now() THEN
    RETURN NULL;
  END IF;
  IF p_first_name = ANY (p_names)
     AND (p_channels IS NULL OR p_first_channel = ANY (p_channels))
     AND (p_paused IS NULL OR p_first_channel <> ALL (p_paused)) THEN
    SELECT t.id INTO v_id FROM cafmq.tasks_live t
     WHERE t.id = p_first_id AND t.state = 'pending' AND NOT t.ordered
       AND t.run_at <= now()
     FOR UPDATE SKIP LOCKED;
    IF v_id IS NOT NULL THEN
      RETURN v_id;
    END IF;
  END IF;
  -- A range of tasks_unordered_ready, in its order. With an equality on the
  -- key instead, a generic plan made while one key held most ready tasks
  -- walks tasks_unordered_queue, reading the whole backlog for each key
  -- whose tasks are behind it or locked.
  SELECT t.id INTO v_id FROM cafmq.tasks_live t
   WHERE t.state = 'pending' AND NOT t.ordered
     AND (cafmq.channel_index_key(t.channel_name, t.channel_args), t.run_at)
         >= (p_key, '-infinity')
     AND (cafmq.channel_index_key(t.channel_name, t.channel_args), t.run_at)
         <= (p_key, now())
     AND t.name = ANY (p_names)
     AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
     AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
   ORDER BY cafmq.channel_index_key(t.channel_name, t.channel_args),
            t.run_at, t.seq
   LIMIT 1
   FOR UPDATE SKIP LOCKED;
  RETURN v_id;
END
$$;
