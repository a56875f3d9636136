SELECT coalesce(max(version), 0) FROM cafmq.schema_version
