-- SPDX-License-Identifier: BSD-3-Clause

-- When the next task becomes due (claim_ready's wait): the earliest of a
-- scheduled task's run_at, a running attempt's lease end (its task is then
-- lost, and claimed again), and a reservation's commit deadline. NULL:
-- nothing is due; the runner waits for a notification.
--
-- A task spawned while the claim ran (committed after its transaction
-- began) has a run_at after the claim's now() but is due already, and its
-- spawn's notification wakes the runners: it is not scheduled. Counted as
-- due soon, such tasks made a runner under a steady load claim again
-- every few milliseconds instead of waiting for those notifications. A
-- task spawned due now has run_at = created_at (both its spawn's now());
-- one whose run_at passed during the claim but was set later (a delay, a
-- retry) still counts, as due now.
--
-- PL/pgSQL, not SQL: a SQL function with subqueries is not inlined, and its
-- body is planned again at every call (0.6 ms, four times the claim of an
-- empty queue); PL/pgSQL keeps the plan for the session.
CREATE OR REPLACE FUNCTION cafmq.claim_next_due()
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
 VOLATILE
AS $$
DECLARE
  v_clock timestamptz := clock_timestamp();
BEGIN
  -- ORDER BY ... LIMIT 1: a generic plan may compute min() by reading every
  -- running lease.
  RETURN least(
    (SELECT t.run_at FROM cafmq.tasks_live t
      WHERE t.state = 'pending' AND NOT t.ordered AND t.run_at > now()
        AND (t.run_at > v_clock OR t.run_at <> t.created_at)
      ORDER BY t.run_at LIMIT 1),
    (SELECT t.run_at FROM cafmq.tasks_live t
      WHERE t.state = 'pending' AND t.ordered AND t.run_at > now()
        AND (t.run_at > v_clock OR t.run_at <> t.created_at)
      ORDER BY t.run_at LIMIT 1),
    (SELECT t.run_at FROM cafmq.tasks_live t
      WHERE t.state = 'running' AND t.run_at > now()
      ORDER BY t.run_at LIMIT 1),
    (SELECT t.commit_deadline FROM cafmq.tasks_live t
      WHERE t.state = 'uncommitted' AND t.commit_deadline > now()
      ORDER BY t.commit_deadline LIMIT 1));
END
$$;
