-- SPDX-License-Identifier: BSD-3-Clause
SELECT state::text, name, channel_name, channel_args, attempt, max_attempts,
       last_error, cancel_requested, node,
       extract(epoch FROM created_at) * 1e6 AS created_us,
       extract(epoch FROM run_at) * 1e6 AS run_at_us,
       extract(epoch FROM started_at) * 1e6 AS started_us,
       extract(epoch FROM finished_at) * 1e6 AS finished_us
  FROM cafmq.tasks WHERE id = $1::uuid
