-- SPDX-License-Identifier: BSD-3-Clause
-- Every attempt of task $1 that started, oldest first.
SELECT attempt, extract(epoch FROM started_at) * 1e6 AS started_us,
       extract(epoch FROM ended_at) * 1e6 AS ended_us, outcome, error, node,
       worker,
       extract(epoch FROM retry_at) * 1e6 AS retry_at_us
  FROM cafmq.task_attempts($1::uuid)
