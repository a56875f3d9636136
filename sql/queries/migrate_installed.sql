SELECT to_regclass('cafmq.schema_version') IS NOT NULL
