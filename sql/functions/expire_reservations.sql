-- SPDX-License-Identifier: BSD-3-Clause

-- Removes reservations whose commit deadline passed (a bounded batch).
CREATE OR REPLACE FUNCTION cafmq.expire_reservations(p_limit integer)
 RETURNS bigint
 LANGUAGE sql
AS $$
  WITH gone AS (
    DELETE FROM cafmq.tasks_live t
     WHERE t.id IN (SELECT x.id FROM cafmq.tasks_live x
                     WHERE x.state = 'uncommitted' AND x.commit_deadline <= now()
                     ORDER BY x.commit_deadline LIMIT p_limit
                     FOR UPDATE SKIP LOCKED)
    RETURNING 1)
  SELECT count(*) FROM gone
$$;
