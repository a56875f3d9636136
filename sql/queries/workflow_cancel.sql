-- SPDX-License-Identifier: BSD-3-Clause
-- Cancels every unfinished task of workflow $1, children before their
-- parents (latest spawned first), so that no child that runs after a
-- failure becomes ready on the way; counts the outcomes.
SELECT c.outcome, count(*) AS tasks
  FROM (SELECT cafmq.cancel(x.id) AS outcome
          FROM (SELECT t.id FROM cafmq.tasks_live t
                 WHERE t.workflow_id = $1::uuid
                 ORDER BY t.seq DESC) x) c
 GROUP BY c.outcome
