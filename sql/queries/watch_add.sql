-- SPDX-License-Identifier: BSD-3-Clause
INSERT INTO cafmq.watches (task_id) VALUES ($1::uuid) ON CONFLICT DO NOTHING
