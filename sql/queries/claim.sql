-- SPDX-License-Identifier: BSD-3-Clause
SELECT id, name, channel_name, channel_args, attempt, max_attempts, ordered,
       extract(epoch FROM timeout) * 1e6 AS timeout_us,
       extract(epoch FROM deadline - now()) * 1e6 AS deadline_in_us,
       payload_json, payload_bytes, cursor_name, cursor_args,
       extract(epoch FROM wait) * 1e6 AS wait_us
  FROM cafmq.claim($1, $2::text[], $3::text[], $4::text[], $5,
                   make_interval(secs => $6::bigint / 1e6), $7, $8, $9)
