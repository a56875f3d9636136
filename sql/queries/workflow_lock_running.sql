-- SPDX-License-Identifier: BSD-3-Clause
-- Before a workflow's cancel (workflow_cancel.sql): locks its running tasks,
-- in id order. A completion locks the parent it ends before the children it
-- readies; the cancel, which ends children before parents, would otherwise
-- hold a child while it waits for that parent (a deadlock). Locked first,
-- a parent's completion either ran before (the cancel waits for it) or
-- waits for the cancel.
SELECT t.id FROM cafmq.tasks_live t
 WHERE t.workflow_id = $1::uuid AND t.state = 'running'
 ORDER BY t.id
   FOR UPDATE
