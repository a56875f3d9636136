-- SPDX-License-Identifier: BSD-3-Clause
-- Ends the live task :'id' by hand in :'state' (completed, failed or
-- cancelled) as cafmq would: it moves to the history. Then :set (SQL
-- assignments) changes its history row. For the shell tests:
--   psql -v id=UUID -v state=failed -v set="attempt = 5" -f finish_by_hand.sql
WITH ended AS (
  DELETE FROM cafmq.tasks_live t WHERE t.id = :'id' RETURNING t),
moved AS (
  INSERT INTO cafmq.tasks_history
  SELECT h.* FROM ended e,
         cafmq.finished_row(e.t, :'state', NULL, NULL, (e.t).lost_attempts) h
  RETURNING finished_at, channel_name, state)
-- Counted as cafmq counts what it moves (cafmq.finished_counts).
INSERT INTO cafmq.finished_counts
SELECT (finished_at AT TIME ZONE 'UTC')::date, channel_name, state, 1
  FROM moved;
UPDATE cafmq.tasks_history SET :set WHERE id = :'id';
