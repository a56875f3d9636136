-- SPDX-License-Identifier: BSD-3-Clause
-- The channel of a task, to route its cancel to the actor that owns it, and
-- its name and attempt, to report a cancel.
SELECT channel_name::text, channel_args::text, name, attempt
  FROM cafmq.tasks WHERE id = $1
