-- SPDX-License-Identifier: BSD-3-Clause
-- A task keeps its earlier attempts, and the worker that ran its last one.
--
-- earlier_attempts: each attempt that ended without ending the task (a
-- failure retried, a lease lost, the final attempt of a task retried by
-- hand) is appended as
--   {"attempt", "started_at", "ended_at", "outcome", "error", "node",
--    "worker", "retry_at"}
-- by the statement that ends it (cafmq.attempt_entry). The row's own
-- columns still describe its current or last attempt, so a task that
-- succeeds at its first attempt writes nothing more. NULL: no earlier
-- attempt.
--
-- worker: the worker node or worker process that ran the attempt a task
-- finished with (NULL: its runner ran it, or none ran); `node` stays the
-- runner whose claim it was. Set in the history only.
ALTER TABLE cafmq.tasks_live
  ADD COLUMN earlier_attempts jsonb,
  ADD COLUMN worker text;
ALTER TABLE cafmq.tasks_history
  ADD COLUMN earlier_attempts jsonb,
  ADD COLUMN worker text;
CREATE OR REPLACE VIEW cafmq.tasks AS
  SELECT * FROM cafmq.tasks_live
  UNION ALL
  SELECT * FROM cafmq.tasks_history;

-- Their function files create them again, taking the workers.
DROP FUNCTION IF EXISTS cafmq.complete(uuid[], integer[]);
DROP FUNCTION IF EXISTS cafmq.complete(uuid[], integer[], jsonb[]);
DROP FUNCTION IF EXISTS cafmq.fail(uuid[], integer[], text[], boolean[]);
DROP FUNCTION IF EXISTS cafmq.finished_row(cafmq.tasks_live, cafmq.task_state,
                                           text, jsonb, integer);
