-- SPDX-License-Identifier: BSD-3-Clause
-- Finished tasks leave the hot table (storage v2). The table the claim
-- walks, cafmq.tasks_live, holds uncommitted, pending and running tasks;
-- a task moves to cafmq.tasks_history in the statement that finishes it.
-- The history is partitioned by finish time, one partition per UTC day,
-- which prune() creates ahead and drops whole once the retention has
-- passed them: no DELETE per row, and no dead rows for vacuum. A finish
-- time with no partition of its day (rows of the upgrade, a clock set
-- back) lands in the default partition, which prune() empties by DELETE.
-- cafmq.tasks becomes a view of both, so whatever read every task reads
-- them still.

-- Its row type is about to become the view's: the function file creates it
-- again for that type.
DROP FUNCTION IF EXISTS cafmq.task_matches(cafmq.tasks, cafmq.task_state[], text,
                                 text, bigint, bigint);

ALTER TABLE cafmq.tasks RENAME TO tasks_live;

CREATE TABLE cafmq.tasks_history (
  LIKE cafmq.tasks_live INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
  CONSTRAINT tasks_history_finished CHECK (
    state IN ('completed', 'failed', 'cancelled') AND finished_at IS NOT NULL)
) PARTITION BY RANGE (finished_at);
ALTER TABLE cafmq.tasks_history ALTER COLUMN seq DROP DEFAULT;
CREATE TABLE cafmq.tasks_history_default PARTITION OF cafmq.tasks_history
  DEFAULT;
-- A task by id (status, inspect, retry); the tasks that finished in a
-- window (the charts, throughput).
CREATE INDEX tasks_history_id ON cafmq.tasks_history (id);
CREATE INDEX tasks_history_finished_at ON cafmq.tasks_history (finished_at);

WITH moved AS (
  DELETE FROM cafmq.tasks_live t
   WHERE t.state IN ('completed', 'failed', 'cancelled')
  RETURNING t.*)
INSERT INTO cafmq.tasks_history SELECT * FROM moved;

DROP INDEX cafmq.tasks_finished;
DROP INDEX cafmq.tasks_failed_or_cancelled;
-- Each table's states, which also let a query of the view by state skip
-- the other table (constraint_exclusion).
ALTER TABLE cafmq.tasks_live ADD CONSTRAINT tasks_live_unfinished
  CHECK (state IN ('uncommitted', 'pending', 'running'));

CREATE VIEW cafmq.tasks AS
  SELECT * FROM cafmq.tasks_live
  UNION ALL
  SELECT * FROM cafmq.tasks_history;

CREATE OR REPLACE VIEW cafmq.queue_throughput AS
  SELECT t.channel_name, t.state, count(*) AS last_minute,
         round(count(*)::numeric / 60.0, 3) AS per_second
    FROM cafmq.tasks_history t
   WHERE t.finished_at > now() - interval '1 minute'
   GROUP BY t.channel_name, t.state;

CREATE OR REPLACE VIEW cafmq.queue_totals AS
  SELECT t.channel_name, t.state, count(*) AS tasks
    FROM cafmq.tasks t
   GROUP BY t.channel_name, t.state;
