-- SPDX-License-Identifier: BSD-3-Clause

-- Removes reservations whose commit deadline passed (a bounded batch). The
-- children of one follow it as of a cancelled parent.
CREATE OR REPLACE FUNCTION cafmq.expire_reservations(p_limit integer)
 RETURNS bigint
 LANGUAGE plpgsql
AS $$
DECLARE
  v_count bigint;
  v_parents uuid[];
BEGIN
  WITH gone AS (
    DELETE FROM cafmq.tasks_live t
     WHERE t.id IN (SELECT x.id FROM cafmq.tasks_live x
                     WHERE x.state = 'uncommitted' AND x.commit_deadline <= now()
                     ORDER BY x.commit_deadline LIMIT p_limit
                     FOR UPDATE SKIP LOCKED)
    RETURNING t.id, t.has_children)
  SELECT count(*), array_agg(g.id) FILTER (WHERE g.has_children)
    INTO v_count, v_parents FROM gone g;
  IF v_parents IS NOT NULL THEN
    PERFORM cafmq.release_children(v_parents);
  END IF;
  RETURN v_count;
END
$$;
