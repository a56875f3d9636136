-- SPDX-License-Identifier: BSD-3-Clause
SELECT id, cancel_requested
  FROM cafmq.keep_alive($1::uuid[], $2::integer[], make_interval(secs => $3::bigint / 1e6))
