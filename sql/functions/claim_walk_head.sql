-- SPDX-License-Identifier: BSD-3-Clause

-- The claim's walk at an ordered channel (claim_walk): its head, the first
-- live ordered task, locked if it is ready to run (pending and due, or
-- running with its lease lapsed) and of a name in p_names; NULL otherwise.
-- A reservation in front that expired is removed here under its row lock;
-- if a commit holds that lock, the reservation may still become live, so
-- the channel waits. The head itself is locked SKIP LOCKED: skipping a
-- locked head must not reach its successor.
CREATE OR REPLACE FUNCTION cafmq.claim_walk_head(
    p_key bigint, p_name text, p_args text, p_names text[])
 RETURNS uuid
 LANGUAGE plpgsql
AS $$
DECLARE
  v_head record;
  v_id uuid;
BEGIN
  LOOP
    SELECT t.id, t.state, t.run_at, t.name, t.commit_deadline INTO v_head
      FROM cafmq.tasks_live t
     WHERE t.ordered
       AND t.state IN ('uncommitted', 'waiting', 'pending', 'running')
       AND cafmq.channel_index_key(t.channel_name, t.channel_args) = p_key
       AND t.channel_name = p_name AND t.channel_args = p_args
     ORDER BY cafmq.channel_index_key(t.channel_name, t.channel_args),
              t.channel_name, t.channel_args, t.seq
     LIMIT 1;
    EXIT WHEN NOT FOUND OR v_head.state <> 'uncommitted'
           OR v_head.commit_deadline > now();
    EXIT WHEN NOT cafmq.expire_reservation(v_head.id);
  END LOOP;
  IF v_head.state IN ('pending', 'running') AND v_head.run_at <= now()
     AND v_head.name = ANY (p_names) THEN
    SELECT t.id INTO v_id FROM cafmq.tasks_live t
     WHERE t.id = v_head.id AND t.state = v_head.state AND t.run_at <= now()
     FOR UPDATE SKIP LOCKED;
  END IF;
  RETURN v_id;
END
$$;
