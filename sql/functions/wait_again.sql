-- SPDX-License-Identifier: BSD-3-Clause

-- Recounts the slots of child p_child (cafmq.child_waits) from its parents
-- that are live now, and returns how many slots wait; for a task made
-- live again by a retry, or a waiting child whose parent a retry made live
-- again. The live parents are locked (FOR KEY SHARE) first: a completion
-- of one that is under way is waited for (it is then no longer live), and
-- one that comes later waits for this transaction and counts the new rows
-- down. Parents before slots, like an ending does.
CREATE OR REPLACE FUNCTION cafmq.wait_again(p_child uuid)
 RETURNS integer
 LANGUAGE plpgsql
AS $$
DECLARE
  v_live uuid[];
  v_slots integer;
BEGIN
  v_live := ARRAY(SELECT l.id FROM cafmq.tasks_live l
                   WHERE l.id IN (SELECT e.parent FROM cafmq.task_parents e
                                   WHERE e.child = p_child)
                   ORDER BY l.id FOR KEY SHARE);
  DELETE FROM cafmq.child_waits w WHERE w.child = p_child;
  INSERT INTO cafmq.child_waits (child, slot, parents_left)
  SELECT e.child, e.slot, count(*) FROM cafmq.task_parents e
   WHERE e.child = p_child AND e.parent = ANY (v_live)
   GROUP BY 1, 2;
  GET DIAGNOSTICS v_slots = ROW_COUNT;
  RETURN v_slots;
END
$$;
