-- SPDX-License-Identifier: BSD-3-Clause

-- Removes the tasks that finished more than p_retention ago, and watches of
-- sessions that are gone; returns how many tasks it removed. A partition of
-- the history whose whole day is past the retention is dropped with its
-- rows and its day's finished_counts (which say how many it held), so a
-- day's tasks go in one step, without reading them, and leave nothing for
-- vacuum; a partition it cannot lock within a second stays for the
-- next call. Rows of the default partition (finished on a day that had no
-- partition) are deleted, up to p_limit. It folds finished_counts into
-- one row per key. Then it makes the next days' partitions
-- (add_history_partitions). One node at a time: returns -1
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
                         'FROM \(''([^'']+)''\)'))[1]::timestamptz AS lower,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid),
                         'TO \(''([^'']+)''\)'))[1]::timestamptz AS upper
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'cafmq.tasks_history'::regclass
       AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
     ORDER BY 2
  LOOP
    EXIT WHEN v_part.upper > v_cutoff;
    BEGIN
      EXECUTE format('DROP TABLE %s', v_part.part);
      -- Its tasks, as counted when they moved in: no scan of the rows.
      WITH dropped AS (
        DELETE FROM cafmq.finished_counts f
         WHERE f.day >= (v_part.lower AT TIME ZONE 'UTC')::date
           AND f.day < (v_part.upper AT TIME ZONE 'UTC')::date
        RETURNING f.tasks)
      SELECT coalesce(sum(d.tasks), 0) INTO v_rows FROM dropped d;
      v_count := v_count + v_rows;
    EXCEPTION WHEN lock_not_available THEN
      NULL;
    END;
  END LOOP;
  PERFORM set_config('lock_timeout', v_lock_timeout, true);
  -- A statement on the partition does not fire the history's counting
  -- triggers: it subtracts what it deletes itself.
  WITH removed AS (
    DELETE FROM cafmq.tasks_history_default d
     WHERE (d.id, d.finished_at) IN (
       SELECT x.id, x.finished_at FROM cafmq.tasks_history_default x
        WHERE x.finished_at < v_cutoff
        ORDER BY x.finished_at LIMIT p_limit)
    RETURNING d.finished_at, d.channel_name, d.state),
  counted AS (
    INSERT INTO cafmq.finished_counts
    SELECT (r.finished_at AT TIME ZONE 'UTC')::date, r.channel_name, r.state,
           -count(*)
      FROM removed r
     GROUP BY 1, 2, 3)
  SELECT count(*) INTO v_rows FROM removed;
  v_count := v_count + v_rows;
  -- One row per key again: the counts that finishing statements added since
  -- the last call, folded (they only insert, so nothing waits for this).
  WITH folded AS (DELETE FROM cafmq.finished_counts RETURNING *)
  INSERT INTO cafmq.finished_counts
  SELECT f.day, f.channel_name, f.state, sum(f.tasks)
    FROM folded f
   GROUP BY 1, 2, 3
  HAVING sum(f.tasks) <> 0;
  -- The ends of parents, kept for their children: those older than the
  -- retention whose children have all ended go, with their edges.
  WITH gone AS (
    DELETE FROM cafmq.parent_results r
     WHERE r.id IN (
       SELECT x.id FROM cafmq.parent_results x
        WHERE x.finished_at < v_cutoff
          AND NOT EXISTS (SELECT 1 FROM cafmq.task_parents e
                            JOIN cafmq.tasks_live c ON c.id = e.child
                           WHERE e.parent = x.id)
        ORDER BY x.finished_at LIMIT p_limit)
    RETURNING r.id)
  DELETE FROM cafmq.task_parents e USING gone g WHERE e.parent = g.id;
  -- Slots of children that left without being ready (an expired or
  -- cleared reservation).
  DELETE FROM cafmq.child_waits w
   WHERE NOT EXISTS (SELECT 1 FROM cafmq.tasks_live t WHERE t.id = w.child);
  PERFORM cafmq.add_history_partitions(2);
  DELETE FROM cafmq.watches w
   WHERE w.backend_pid NOT IN (SELECT a.pid FROM pg_stat_activity a
                                WHERE a.pid IS NOT NULL);
  RETURN v_count;
END
$$;
