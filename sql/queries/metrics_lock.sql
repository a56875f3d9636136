-- SPDX-License-Identifier: BSD-3-Clause
-- One process per cluster exports the queue-level metrics: the one whose
-- metrics connection holds this session lock, until that connection ends.
SELECT pg_try_advisory_lock(hashtextextended('cafmq.metrics', 7305))
