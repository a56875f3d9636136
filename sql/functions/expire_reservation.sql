-- SPDX-License-Identifier: BSD-3-Clause

-- Removes reservation p_id if its commit deadline passed and no commit
-- holds its row (a claim walk that finds it at the head of its ordered
-- channel). Its children follow it as of a cancelled parent. Returns
-- whether it was removed.
CREATE OR REPLACE FUNCTION cafmq.expire_reservation(p_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
AS $$
DECLARE
  v_parent boolean;
BEGIN
  DELETE FROM cafmq.tasks_live t
   WHERE t.id = (SELECT x.id FROM cafmq.tasks_live x
                  WHERE x.id = p_id AND x.state = 'uncommitted'
                    AND x.commit_deadline <= now()
                  FOR UPDATE SKIP LOCKED)
  RETURNING t.has_children INTO v_parent;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  IF v_parent THEN
    PERFORM cafmq.release_children(ARRAY[p_id]);
  END IF;
  RETURN true;
END
$$;
