-- SPDX-License-Identifier: BSD-3-Clause
-- Registers watches of the tasks $1 (uuid[]) for this session: their changes
-- are published on cafmq_status.
INSERT INTO cafmq.watches (task_id)
SELECT unnest($1::uuid[]) ON CONFLICT DO NOTHING
