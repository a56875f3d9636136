-- SPDX-License-Identifier: BSD-3-Clause

-- Records on the live rows which worker node or process runs their current
-- attempt (a runner's session writes what started on its joined workers,
-- at most every 50 ms), so that an attempt lost with its lease names that
-- worker (cafmq.claim_start), as one that ends there does. A new attempt
-- clears it (claim_start); the history keeps the worker of the last one.
-- A row locked meanwhile (its attempt ending, or its lease being renewed)
-- is passed over, not waited for: its record is lost, not the attempt.
-- The lookup compares state::text so that the ids go through the primary
-- key, never the partial index tasks_running (see complete.sql).
CREATE OR REPLACE FUNCTION cafmq.record_workers(
    p_ids uuid[], p_attempts integer[], p_workers text[])
 RETURNS void
 LANGUAGE sql
AS $$
  UPDATE cafmq.tasks_live t SET worker = w.worker
    FROM unnest(p_ids, p_attempts, p_workers) AS w (id, attempt, worker)
   WHERE t.id = w.id AND t.attempt = w.attempt
     AND t.id IN (SELECT l.id FROM cafmq.tasks_live l
                   WHERE l.id = ANY (p_ids) AND l.state::text = 'running'
                   ORDER BY l.id
                     FOR UPDATE SKIP LOCKED)
$$;
