-- SPDX-License-Identifier: BSD-3-Clause
-- The live table with its indexes and TOAST, in bytes.
SELECT pg_total_relation_size('cafmq.tasks_live')
