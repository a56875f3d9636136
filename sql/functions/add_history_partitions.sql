-- SPDX-License-Identifier: BSD-3-Clause

-- Creates the daily partitions of the history (UTC days, named
-- tasks_history_YYYYMMDD) from today to p_days_ahead days ahead that do
-- not exist yet; prune() calls it, so the partitions are made days before
-- they are needed. Rows of such a day that wait in the default partition
-- (finished while it had no partition) move into the new one, which is
-- then analyzed. A lock it
-- cannot get within a second leaves the day for the next call. Returns
-- how many partitions it created.
CREATE OR REPLACE FUNCTION cafmq.add_history_partitions(p_days_ahead integer)
 RETURNS integer
 LANGUAGE plpgsql
AS $$
DECLARE
  v_today date := (now() AT TIME ZONE 'UTC')::date;
  v_day date;
  v_name text;
  v_created integer := 0;
  v_moved bigint;
  v_lock_timeout text := current_setting('lock_timeout');
BEGIN
  PERFORM set_config('lock_timeout', '1s', true);
  FOR v_day IN SELECT v_today + d FROM generate_series(0, p_days_ahead) d
  LOOP
    v_name := 'tasks_history_' || to_char(v_day, 'YYYYMMDD');
    CONTINUE WHEN to_regclass('cafmq.' || v_name) IS NOT NULL;
    BEGIN
      -- No row of that day may reach the default partition meanwhile.
      LOCK TABLE cafmq.tasks_history_default IN SHARE ROW EXCLUSIVE MODE;
      EXECUTE format('CREATE TABLE cafmq.%I (LIKE cafmq.tasks_history '
                     'INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_name);
      EXECUTE format(
        'WITH waiting AS (DELETE FROM cafmq.tasks_history_default d '
        'WHERE d.finished_at >= $1 AND d.finished_at < $2 RETURNING d.*) '
        'INSERT INTO cafmq.%I SELECT * FROM waiting', v_name)
        USING v_day::timestamp AT TIME ZONE 'UTC',
              (v_day + 1)::timestamp AT TIME ZONE 'UTC';
      GET DIAGNOSTICS v_moved = ROW_COUNT;
      -- Rows moved in: statistics now, not when autovacuum gets to it (the
      -- last minute's throughput would scan the day meanwhile).
      IF v_moved > 0 THEN
        EXECUTE format('ANALYZE cafmq.%I', v_name);
      END IF;
      EXECUTE format('ALTER TABLE cafmq.tasks_history ATTACH PARTITION '
                     'cafmq.%I FOR VALUES FROM (%L) TO (%L)', v_name,
                     v_day::timestamp AT TIME ZONE 'UTC',
                     (v_day + 1)::timestamp AT TIME ZONE 'UTC');
      v_created := v_created + 1;
    EXCEPTION WHEN lock_not_available THEN
      EXIT;
    END;
  END LOOP;
  PERFORM set_config('lock_timeout', v_lock_timeout, true);
  RETURN v_created;
END
$$;
