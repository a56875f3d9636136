-- SPDX-License-Identifier: BSD-3-Clause

-- Keeps cafmq.finished_counts (migration 0018) in step with the history
-- where tasks leave it or change: after each statement that deletes from
-- cafmq.tasks_history (retry, clear), one row per UTC day, channel and
-- state it deleted, subtracted; after an update (by hand: the queue's
-- functions never update a finished task), the rows as they were
-- subtracted and as they are added. The statements that move tasks in
-- (complete, fail, cancel, claim_start) count them themselves, in the same
-- statement: cheaper than a trigger on the path of every task. A statement
-- that names a partition (prune's deletes from the default partition, the
-- moves of add_history_partitions) fires neither: prune counts its own.
CREATE OR REPLACE FUNCTION cafmq.count_finished()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO cafmq.finished_counts (day, channel_name, state, tasks)
    SELECT c.day, c.channel_name, c.state, sum(c.n)
      FROM (SELECT (o.finished_at AT TIME ZONE 'UTC')::date, o.channel_name,
                   o.state, -1
              FROM was o
            UNION ALL
            SELECT (n.finished_at AT TIME ZONE 'UTC')::date, n.channel_name,
                   n.state, 1
              FROM now_is n) AS c (day, channel_name, state, n)
     GROUP BY 1, 2, 3
    HAVING sum(c.n) <> 0;
  ELSE
    INSERT INTO cafmq.finished_counts (day, channel_name, state, tasks)
    SELECT (c.finished_at AT TIME ZONE 'UTC')::date, c.channel_name, c.state,
           -count(*)
      FROM removed c
     GROUP BY 1, 2, 3;
  END IF;
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER count_finished_removed
  AFTER DELETE ON cafmq.tasks_history
  REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION cafmq.count_finished();

CREATE OR REPLACE TRIGGER count_finished_updated
  AFTER UPDATE ON cafmq.tasks_history
  REFERENCING OLD TABLE AS was NEW TABLE AS now_is
  FOR EACH STATEMENT EXECUTE FUNCTION cafmq.count_finished();
