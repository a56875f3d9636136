-- SPDX-License-Identifier: BSD-3-Clause
DELETE FROM cafmq.watches WHERE task_id = $1::uuid AND backend_pid = pg_backend_pid()
