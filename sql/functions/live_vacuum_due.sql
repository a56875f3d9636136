-- SPDX-License-Identifier: BSD-3-Clause

-- Whether a vacuum of the live table is due now, between autovacuum's
-- visits (autovacuum looks at a database once a minute by default; a
-- drain claims and ends tens of thousands of tasks a second, and every
-- claim's reads of the ready queue start at its head, over the index
-- entries of the tasks claimed since the last vacuum): at least
-- p_min_dead_rows dead row versions (the statistics, which backends send
-- about once a second), and some of them removable. None is while a
-- transaction that began before the table's last vacuum still runs (a held
-- snapshot, cafmq.oldest_snapshot): that vacuum removed all it could.
CREATE OR REPLACE FUNCTION cafmq.live_vacuum_due(p_min_dead_rows bigint)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $$
  SELECT pg_stat_get_dead_tuples(c.oid) >= p_min_dead_rows
         AND coalesce(
               cafmq.oldest_snapshot()
                 < clock_timestamp()
                   - greatest(pg_stat_get_last_vacuum_time(c.oid),
                              pg_stat_get_last_autovacuum_time(c.oid)),
               true)
    FROM (SELECT 'cafmq.tasks_live'::regclass::oid) AS c (oid)
$$;
