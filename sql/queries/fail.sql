-- SPDX-License-Identifier: BSD-3-Clause
-- $5: the worker that ran each attempt (NULL where the runner did); NULL as
-- a whole when none did.
SELECT id, state::text, extract(epoch FROM run_at) * 1e6 AS run_at_us
  FROM cafmq.fail($1::uuid[], $2::integer[], $3::text[], $4::boolean[],
                  $5::text[])
