-- SPDX-License-Identifier: BSD-3-Clause
-- The status of the tasks $1 (uuid[]); unknown ids have no row.
SELECT id, state::text, name, channel_name, channel_args, attempt,
       max_attempts, last_error, cancel_requested, node,
       extract(epoch FROM created_at) * 1e6 AS created_us,
       extract(epoch FROM run_at) * 1e6 AS run_at_us,
       extract(epoch FROM started_at) * 1e6 AS started_us,
       extract(epoch FROM finished_at) * 1e6 AS finished_us,
       priority, result::text AS result,
       coalesce(state = 'uncommitted' AND commit_deadline <= now(), false)
         AS expired,
       CASE WHEN state = 'uncommitted'
            THEN (extract(epoch FROM commit_deadline - now()) * 1e6)::bigint
       END AS commit_left_us
  FROM cafmq.tasks WHERE id = ANY($1::uuid[])
