-- SPDX-License-Identifier: BSD-3-Clause
-- One page of tasks matching a filter, newest first (keyset on the primary
-- key: ids are time-ordered). $1..$5 the filter (cafmq.task_matches), $6 the
-- page cursor, $7 rows.
SELECT t.id::text AS id, state::text, name, channel_name, channel_args, attempt,
       max_attempts, last_error, cancel_requested, node,
       extract(epoch FROM created_at) * 1e6 AS created_us,
       extract(epoch FROM run_at) * 1e6 AS run_at_us,
       extract(epoch FROM started_at) * 1e6 AS started_us,
       extract(epoch FROM finished_at) * 1e6 AS finished_us,
       priority, result::text AS result
  FROM cafmq.tasks t
 WHERE cafmq.task_matches(t, $1::cafmq.task_state[], $2::text, $3::text, $4::bigint,
                          $5::bigint)
   AND ($6::uuid IS NULL OR t.id < $6::uuid)
 ORDER BY t.id DESC
 LIMIT $7::integer
