-- SPDX-License-Identifier: BSD-3-Clause
-- The channel of a task, to route its cancel to the actor that owns it.
SELECT channel_name::text, channel_args::text FROM cafmq.tasks WHERE id = $1
