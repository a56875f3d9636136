-- SPDX-License-Identifier: BSD-3-Clause
-- Refuses the ids of $1 (uuid[]) that finished tasks hold (cafmq.refuse_finished_ids).
SELECT cafmq.refuse_finished_ids($1::uuid[])
