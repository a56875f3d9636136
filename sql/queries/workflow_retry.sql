-- SPDX-License-Identifier: BSD-3-Clause
-- Retries the failed tasks of workflow $1; the descendants they had
-- cancelled wait for them again (cafmq.retry).
SELECT id::text, outcome FROM cafmq.retry(ARRAY(
  SELECT t.id FROM cafmq.tasks_history t
   WHERE t.workflow_id = $1::uuid AND t.state = 'failed'
   ORDER BY t.seq))
