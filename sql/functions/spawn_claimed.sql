-- SPDX-License-Identifier: BSD-3-Clause

-- Direct dispatch: a runtime that spawns a task while one of its handlers
-- is free writes it already claimed. This spawns p_specs (one spec, with
-- its id, as cafmq.spawn takes it) and claims that task for p_node by id
-- (cafmq.claim_ids, with the runner's names, channels, local pauses,
-- lease and poison bound), in the caller's transaction: the runtime sends
-- it as one statement, which commits it. The spawn's notification leaves
-- the task out (cafmq.dispatching, read by cafmq.notify_spawned); if the
-- claim did not take it and it is pending (due later, or held back by
-- ordering, a pause, a limit, a priority or another claim's lock), its
-- channel is notified as after a spawn. A reservation or a task after
-- parents is not pending, and a unique key's duplicate (created false) is
-- not claimed: each follows its own rule.
--
-- Rows: those of claim_ids (the claimed attempt, then the row without an
-- id whose wait is 0 when the task is pending and held back), or one row
-- without a claim for a duplicate; each names the spawned task (the
-- holder of the key for a duplicate) and whether the spawn created it.
CREATE OR REPLACE FUNCTION cafmq.spawn_claimed(
    p_specs json,
    p_node text,
    p_names text[],
    p_channels text[],
    p_paused text[],
    p_lease interval,
    p_max_lost integer)
 RETURNS TABLE (spawned_id uuid, created boolean, claimed cafmq.claim_row)
 LANGUAGE plpgsql
AS $$
DECLARE
  v_id uuid;
  v_created boolean;
BEGIN
  PERFORM set_config('cafmq.dispatching', p_specs->0->>'id', true);
  SELECT s.id, s.created INTO v_id, v_created FROM cafmq.spawn(p_specs) s;
  PERFORM cafmq.refuse_finished_ids(ARRAY[v_id]);
  PERFORM set_config('cafmq.dispatching', '', true);
  spawned_id := v_id;
  created := v_created;
  IF NOT v_created THEN
    RETURN NEXT;
    RETURN;
  END IF;
  FOR claimed IN
    SELECT * FROM cafmq.claim_ids(p_node, p_names, p_channels, p_paused,
                                  ARRAY[v_id], p_lease, p_max_lost)
  LOOP
    RETURN NEXT;
  END LOOP;
  PERFORM pg_notify('cafmq_ready', t.channel_name)
     FROM cafmq.tasks_live t
    WHERE t.id = v_id AND t.state = 'pending';
END
$$;
