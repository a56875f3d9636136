-- SPDX-License-Identifier: BSD-3-Clause

-- How long the oldest transaction of this database that keeps vacuum from
-- removing dead row versions has run: a session that holds a snapshot or a
-- transaction id (a REPEATABLE READ transaction, a long report, a session
-- idle in a transaction), or a prepared transaction. NULL when there is
-- none. Vacuum and concurrent index builds are left out: other vacuums
-- ignore their snapshots. A role sees the transaction start of its own
-- sessions only, unless it has pg_read_all_stats (pg_monitor); the calling
-- session is left out. Replication slots and standbys' feedback hold the
-- horizon too, but have no start time: not counted.
CREATE OR REPLACE FUNCTION cafmq.oldest_snapshot()
 RETURNS interval
 LANGUAGE sql
 STABLE
AS $$
  SELECT clock_timestamp() - min(s.since)
    FROM (SELECT a.xact_start
            FROM pg_stat_activity a
           WHERE a.datname = current_database()
             AND a.pid <> pg_backend_pid()
             AND a.backend_type = 'client backend'
             AND (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
             AND a.query !~* '^\s*(vacuum|create index concurrently|reindex)'
          UNION ALL
          SELECT p.prepared
            FROM pg_prepared_xacts p
           WHERE p.database = current_database()) AS s (since)
$$;
