-- SPDX-License-Identifier: BSD-3-Clause
-- The tasks of workflow $1 in spawn order: id, name, state, parents,
-- result and last error.
SELECT t.id::text, t.name, t.state::text,
       ARRAY(SELECT e.parent::text FROM cafmq.task_parents e
              WHERE e.child = t.id ORDER BY e.parent) AS parents,
       t.result::text, t.last_error, t.on_parent_failure
  FROM cafmq.tasks t
 WHERE t.workflow_id = $1::uuid
 ORDER BY t.seq
