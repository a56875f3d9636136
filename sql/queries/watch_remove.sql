-- SPDX-License-Identifier: BSD-3-Clause
-- Ends this session's watches of the tasks $1 (uuid[]).
DELETE FROM cafmq.watches
 WHERE task_id = ANY($1::uuid[]) AND backend_pid = pg_backend_pid()
