-- SPDX-License-Identifier: BSD-3-Clause

-- After a retry made p_parents live again, their children wait for them
-- again:
--   - a child still waiting (one that runs after failures, or one that
--     waits for other parents too) recounts its slots (cafmq.wait_again):
--     the retried parent's ending was counted already;
--   - a child cancelled by a parent's failure (its last error begins
--     "parent "), none of whose parents is failed or cancelled and not live
--     again, moves from the history back to the live table, waiting, with
--     its children in turn.
-- Returns the ids revived.
CREATE OR REPLACE FUNCTION cafmq.revive_children(p_parents uuid[])
 RETURNS uuid[]
 LANGUAGE plpgsql
AS $$
DECLARE
  v_task cafmq.tasks_live;
  v_revived uuid[] := '{}';
  v_parents uuid[] := '{}';
  v_id uuid;
BEGIN
  FOR v_id IN
    SELECT DISTINCT e.child FROM cafmq.task_parents e
      JOIN cafmq.tasks_live c ON c.id = e.child
     WHERE e.parent = ANY (p_parents) AND c.state IN ('waiting', 'uncommitted')
     ORDER BY 1
  LOOP
    UPDATE cafmq.tasks_live t SET parents_left = cafmq.wait_again(v_id)
     WHERE t.id = v_id;
  END LOOP;
  FOR v_id IN
    SELECT DISTINCT h.id
      FROM cafmq.task_parents e
      JOIN cafmq.tasks_history h ON h.id = e.child
     WHERE e.parent = ANY (p_parents) AND h.state = 'cancelled'
       AND h.last_error LIKE 'parent %'
       AND NOT EXISTS (
         SELECT 1 FROM cafmq.task_parents o
           JOIN cafmq.parent_results r ON r.id = o.parent
          WHERE o.child = h.id AND r.state <> 'completed'
            AND NOT EXISTS (SELECT 1 FROM cafmq.tasks_live l
                             WHERE l.id = o.parent))
     ORDER BY h.id
  LOOP
    DELETE FROM cafmq.tasks_history t WHERE t.id = v_id
    RETURNING t.* INTO v_task;
    CONTINUE WHEN NOT FOUND;
    v_task.state := 'waiting';
    v_task.parents_left := cafmq.wait_again(v_id);
    v_task.finished_at := NULL;
    v_task.cancel_requested := false;
    v_task.last_error := NULL;
    v_task.worker := NULL;
    INSERT INTO cafmq.tasks_live VALUES (v_task.*);
    v_revived := v_revived || v_id;
    IF v_task.has_children THEN
      v_parents := v_parents || v_id;
    END IF;
  END LOOP;
  IF cardinality(v_parents) > 0 THEN
    v_revived := v_revived || cafmq.revive_children(v_parents);
  END IF;
  PERFORM cafmq.publish_status(v_revived);
  RETURN v_revived;
END
$$;
