-- SPDX-License-Identifier: BSD-3-Clause

-- Raises the live table's primary key error if a finished task holds one of
-- these ids. That key sees live tasks only, and the history's id index is
-- not unique (a unique index of a partitioned table must hold the partition
-- key), so a spawn with ids its caller chose calls this after its insert;
-- ids cafmq makes are time-ordered with 74 random bits. A transaction that
-- reads from an older snapshot (REPEATABLE READ) does not see a task that
-- finished after it began. A task that this very transaction spawned and
-- ended before it started (its parent had failed: cafmq.link_parents) is
-- not a duplicate of itself.
CREATE OR REPLACE FUNCTION cafmq.refuse_finished_ids(p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
AS $$
DECLARE
  v_id uuid;
BEGIN
  SELECT h.id INTO v_id FROM cafmq.tasks_history h
   WHERE h.id = ANY (p_ids)
     AND NOT (h.created_at = now() AND h.state = 'cancelled'
              AND h.started_at IS NULL)
   LIMIT 1;
  IF FOUND THEN
    RAISE unique_violation USING
      MESSAGE = 'duplicate key value violates unique constraint "tasks_pkey"',
      DETAIL = format('Key (id)=(%s) already exists.', v_id),
      SCHEMA = 'cafmq', TABLE = 'tasks_history', CONSTRAINT = 'tasks_pkey';
  END IF;
END
$$;
