-- SPDX-License-Identifier: BSD-3-Clause
-- Finished totals without a scan of the history.
--
-- cafmq.finished_counts holds signed counts of the history's tasks by UTC
-- day of their finish, channel and state: the statement that moves tasks
-- into the history adds a row per (day, channel, state) it moved, and one
-- that takes tasks out (retry, clear) subtracts (a trigger, in
-- count_finished.sql); prune drops a day's rows with the day's partition,
-- subtracts what it deletes from the default partition, and folds the rest
-- into one row per key. Rows are only inserted between folds, so no row is
-- a point of contention between runners: the sum per key is the count.
CREATE TABLE cafmq.finished_counts (
  day date NOT NULL,
  channel_name text NOT NULL,
  state cafmq.task_state NOT NULL,
  tasks bigint NOT NULL
);
CREATE INDEX finished_counts_day ON cafmq.finished_counts (day);

-- What the history holds now; no task may finish meanwhile (until the
-- migration commits, with the functions that count).
LOCK TABLE cafmq.tasks_history IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO cafmq.finished_counts
SELECT (t.finished_at AT TIME ZONE 'UTC')::date, t.channel_name, t.state,
       count(*)
  FROM cafmq.tasks_history t
 GROUP BY 1, 2, 3;

-- The finished totals read the counts; the live ones still count their
-- (small) table.
CREATE OR REPLACE VIEW cafmq.queue_totals AS
  SELECT t.channel_name, t.state, count(*) AS tasks
    FROM cafmq.tasks_live t
   GROUP BY t.channel_name, t.state
  UNION ALL
  SELECT c.channel_name, c.state, sum(c.tasks)::bigint AS tasks
    FROM cafmq.finished_counts c
   GROUP BY c.channel_name, c.state
  HAVING sum(c.tasks) <> 0;
