-- SPDX-License-Identifier: BSD-3-Clause

-- Deletes up to p_limit tasks that finished more than p_retention ago, and
-- watches of sessions that are gone. One node at a time: returns -1 without
-- doing anything when another transaction is pruning.
CREATE OR REPLACE FUNCTION cafmq.prune(p_retention interval, p_limit integer)
 RETURNS bigint
 LANGUAGE plpgsql
AS $$
DECLARE
  v_count bigint;
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended('cafmq.prune', 7305)) THEN
    RETURN -1;
  END IF;
  DELETE FROM cafmq.tasks t
   WHERE t.id IN (SELECT x.id FROM cafmq.tasks x
                   WHERE x.state IN ('completed', 'failed', 'cancelled')
                     AND x.finished_at < now() - p_retention
                   ORDER BY x.finished_at LIMIT p_limit);
  GET DIAGNOSTICS v_count = ROW_COUNT;
  DELETE FROM cafmq.watches w
   WHERE w.backend_pid NOT IN (SELECT a.pid FROM pg_stat_activity a
                                WHERE a.pid IS NOT NULL);
  RETURN v_count;
END
$$;
