INSERT INTO cafmq.schema_version (version, name) VALUES ($1, $2)
