-- SPDX-License-Identifier: BSD-3-Clause
-- A task keeps its earlier attempts: each attempt that ended without
-- ending the task (a failure retried, a lease lost, the final attempt of a
-- task retried by hand) is appended to earlier_attempts as
--   {"attempt", "started_at", "ended_at", "outcome", "error", "node",
--    "retry_at"}
-- by the statement that ends it. The row's own columns still describe its
-- current or last attempt, so a task that succeeds at its first attempt
-- writes nothing more. NULL: no earlier attempt.
ALTER TABLE cafmq.tasks_live ADD COLUMN earlier_attempts jsonb;
ALTER TABLE cafmq.tasks_history ADD COLUMN earlier_attempts jsonb;
CREATE OR REPLACE VIEW cafmq.tasks AS
  SELECT * FROM cafmq.tasks_live
  UNION ALL
  SELECT * FROM cafmq.tasks_history;
