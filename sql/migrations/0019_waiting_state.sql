-- SPDX-License-Identifier: BSD-3-Clause
-- Workflows: a task that waits for its parents (0020) is in state 'waiting'
-- until the last of them ends. An enum value added in a transaction cannot
-- be used before that transaction commits, so this file holds nothing else
-- and migrate() commits after it (every migration that adds an enum value
-- is committed on its own).
ALTER TYPE cafmq.task_state ADD VALUE IF NOT EXISTS 'waiting' BEFORE 'pending';
