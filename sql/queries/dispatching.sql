-- SPDX-License-Identifier: BSD-3-Clause
-- Direct dispatch: the task $1 that this transaction spawns and claims is
-- left out of the spawn's notification (cafmq.notify_spawned), until the
-- transaction ends.
SELECT set_config('cafmq.dispatching', $1, true)
