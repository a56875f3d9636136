-- SPDX-License-Identifier: BSD-3-Clause
SELECT id, state::text, extract(epoch FROM run_at) * 1e6 AS run_at_us
  FROM cafmq.fail($1::uuid[], $2::integer[], $3::text[], $4::boolean[])
