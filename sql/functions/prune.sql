-- SPDX-License-Identifier: BSD-3-Clause

-- Removes the tasks that finished more than p_retention ago, and watches of
-- sessions that are gone; returns how many tasks it removed. A partition of
-- the history whose whole day is past the retention is dropped with its
-- rows (counted first), so a day's tasks go in one step and leave nothing
-- for vacuum; a partition it cannot lock within a second stays for the
-- next call. Rows of the default partition (finished on a day that had no
-- partition) are deleted, up to p_limit. Then it makes the next days'
-- partitions (add_history_partitions). One node at a time: returns -1
-- without doing anything when another transaction is pruning.
CREATE OR REPLACE FUNCTION cafmq.prune(p_retention interval, p_limit integer)
 RETURNS bigint
 LANGUAGE plpgsql
AS $$
DECLARE
  v_cutoff timestamptz := now() - p_retention;
  v_count bigint := 0;
  v_rows bigint;
  v_part record;
  v_lock_timeout text := current_setting('lock_timeout');
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtextextended('cafmq.prune', 7305)) THEN
    RETURN -1;
  END IF;
  -- A drop waits for every transaction that uses the history: at most a
  -- second, with the finishing statements queued behind it.
  PERFORM set_config('lock_timeout', '1s', true);
  FOR v_part IN
    SELECT c.oid::regclass AS part,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid),
                         'TO \(''([^'']+)''\)'))[1]::timestamptz AS upper
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'cafmq.tasks_history'::regclass
       AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
     ORDER BY 2
  LOOP
    EXIT WHEN v_part.upper > v_cutoff;
    BEGIN
      EXECUTE format('SELECT count(*) FROM %s', v_part.part) INTO v_rows;
      EXECUTE format('DROP TABLE %s', v_part.part);
      v_count := v_count + v_rows;
    EXCEPTION WHEN lock_not_available THEN
      NULL;
    END;
  END LOOP;
  PERFORM set_config('lock_timeout', v_lock_timeout, true);
  DELETE FROM cafmq.tasks_history_default d
   WHERE (d.id, d.finished_at) IN (
     SELECT x.id, x.finished_at FROM cafmq.tasks_history_default x
      WHERE x.finished_at < v_cutoff
      ORDER BY x.finished_at LIMIT p_limit);
  GET DIAGNOSTICS v_rows = ROW_COUNT;
  v_count := v_count + v_rows;
  PERFORM cafmq.add_history_partitions(2);
  DELETE FROM cafmq.watches w
   WHERE w.backend_pid NOT IN (SELECT a.pid FROM pg_stat_activity a
                                WHERE a.pid IS NOT NULL);
  RETURN v_count;
END
$$;
