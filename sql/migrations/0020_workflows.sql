-- SPDX-License-Identifier: BSD-3-Clause
-- Workflows: tasks that wait for other tasks.
--
-- A task spawned after parents is 'waiting' until each has ended. Its
-- parents are dealt into slots (cafmq.child_waits, cafmq.child_slots), each
-- counting its parents that have not ended; parents_left counts the slots
-- not yet at zero. The statement that ends a parent (complete, fail,
-- cancel, ...) counts its slot down in the same transaction; the one that
-- brings a slot to zero counts the child's row down, and the one that
-- brings that to zero makes the child pending (cafmq.release_children).
-- So a fan-in's parents, completed at the same moment by many runners,
-- wait for each other only within a slot, and the child's row is written
-- once per slot, not once per parent. A parent that
-- fails or is cancelled ends a child whose on_parent_failure is 'cancel';
-- one whose policy is 'run' still runs when every parent has ended.
-- has_children marks a parent, so that ending a task without children
-- reads nothing more.
ALTER TABLE cafmq.tasks_live
  ADD COLUMN parents_left integer,
  ADD COLUMN on_parent_failure text,
  ADD COLUMN has_children boolean NOT NULL DEFAULT false,
  ADD COLUMN workflow_id uuid;
ALTER TABLE cafmq.tasks_history
  ADD COLUMN parents_left integer,
  ADD COLUMN on_parent_failure text,
  ADD COLUMN has_children boolean NOT NULL DEFAULT false,
  ADD COLUMN workflow_id uuid;

ALTER TABLE cafmq.tasks_live
  DROP CONSTRAINT tasks_live_unfinished,
  ADD CONSTRAINT tasks_live_unfinished
    CHECK (state IN ('uncommitted', 'waiting', 'pending', 'running')),
  ADD CONSTRAINT tasks_waiting CHECK (state <> 'waiting' OR parents_left > 0),
  ADD CONSTRAINT tasks_parents
    CHECK ((parents_left IS NULL) = (on_parent_failure IS NULL)
           AND parents_left >= 0 AND on_parent_failure IN ('cancel', 'run'));

-- A waiting ordered task holds its place in its channel like a reservation,
-- and a waiting task holds its unique key.
DROP INDEX cafmq.tasks_ordered_live;
CREATE INDEX tasks_ordered_live ON cafmq.tasks_live
  (channel_name, channel_args, seq)
  WHERE ordered AND state IN ('uncommitted', 'waiting', 'pending', 'running');
DROP INDEX cafmq.tasks_unique_key;
CREATE UNIQUE INDEX tasks_unique_key ON cafmq.tasks_live (unique_key)
  WHERE unique_key IS NOT NULL
    AND state IN ('uncommitted', 'waiting', 'pending', 'running');
CREATE INDEX tasks_live_workflow ON cafmq.tasks_live (workflow_id)
  WHERE workflow_id IS NOT NULL;
CREATE INDEX tasks_history_workflow ON cafmq.tasks_history (workflow_id)
  WHERE workflow_id IS NOT NULL;

-- The union of both tables, with the new columns.
CREATE OR REPLACE VIEW cafmq.tasks AS
  SELECT * FROM cafmq.tasks_live
  UNION ALL
  SELECT * FROM cafmq.tasks_history;

-- The live counts per channel and state count the waiting tasks too.
CREATE OR REPLACE VIEW cafmq.queue_depth AS
SELECT l.channel_name, l.state, count(*) AS tasks,
       count(*) FILTER (WHERE l.state = 'pending' AND l.run_at <= now())
         AS ready,
       CASE WHEN l.state = 'pending'
            THEN now() - min(l.run_at) FILTER (WHERE l.run_at <= now())
       END AS oldest_pending_age
  FROM (SELECT t.channel_name, t.state, t.run_at FROM cafmq.tasks_live t
         WHERE t.state = 'pending' AND NOT t.ordered
        UNION ALL
        SELECT t.channel_name, t.state, t.run_at FROM cafmq.tasks_live t
         WHERE t.ordered AND t.state = 'pending'
        UNION ALL
        SELECT t.channel_name, t.state, t.run_at FROM cafmq.tasks_live t
         WHERE t.state = 'running'
        UNION ALL
        SELECT t.channel_name, t.state, t.run_at FROM cafmq.tasks_live t
         WHERE t.state IN ('uncommitted', 'waiting')) l
 GROUP BY l.channel_name, l.state;

-- Who waits for whom: a row per (child, parent), from the child's spawn
-- until prune removes an ended parent's rows whose children have ended.
CREATE TABLE cafmq.task_parents (
  child uuid NOT NULL,
  parent uuid NOT NULL,
  slot smallint NOT NULL CHECK (slot >= 0),
  PRIMARY KEY (child, parent),
  CHECK (child <> parent)
);
CREATE INDEX task_parents_parent ON cafmq.task_parents (parent);

-- Per waiting child and slot, how many of the slot's parents have not
-- ended; a child's rows go when it is ready or ends.
CREATE TABLE cafmq.child_waits (
  child uuid NOT NULL,
  slot smallint NOT NULL,
  parents_left integer NOT NULL CHECK (parents_left >= 0),
  PRIMARY KEY (child, slot)
);

-- How each parent ended, kept while a child of it may still run and read it
-- (current_task::parent_results), whatever the history's retention.
CREATE TABLE cafmq.parent_results (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  state cafmq.task_state NOT NULL,
  result jsonb,
  last_error text,
  finished_at timestamptz NOT NULL
);

-- A claimed task with parents gets their ends with it (JSON).
ALTER TYPE cafmq.claim_row ADD ATTRIBUTE parents text;

ALTER TYPE cafmq.spawn_spec
  ADD ATTRIBUTE parents uuid[],
  ADD ATTRIBUTE on_parent_failure text,
  ADD ATTRIBUTE workflow_id uuid;
