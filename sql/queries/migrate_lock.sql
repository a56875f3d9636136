-- SPDX-License-Identifier: BSD-3-Clause
SELECT pg_advisory_xact_lock(hashtextextended('cafmq.migrate', 7305))
