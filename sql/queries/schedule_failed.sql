-- SPDX-License-Identifier: BSD-3-Clause
-- A schedule this runner cannot fire: says why, and tries again in a minute.
UPDATE cafmq.schedules
   SET last_error = $2::text, next_run_at = now() + interval '1 minute'
 WHERE name = $1::text
