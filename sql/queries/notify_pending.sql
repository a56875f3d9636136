-- SPDX-License-Identifier: BSD-3-Clause
-- Direct dispatch: the claim in the spawn's transaction did not take the
-- task $1 (due later, or held back by a pause, a limit, ordering, a
-- priority, or locked): wake the runners of its channel, as its spawn
-- would have, if it is pending (one waiting for parents or uncommitted is
-- woken by its own rule, as after any spawn).
SELECT pg_notify('cafmq_ready', t.channel_name)
  FROM cafmq.tasks_live t
 WHERE t.id = $1 AND t.state = 'pending'
