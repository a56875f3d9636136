SELECT pg_advisory_xact_lock(hashtextextended('cafmq.migrate', 7305))
