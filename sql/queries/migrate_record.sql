INSERT INTO cafmq.schema_version (version, name, checksum) VALUES ($1, $2, $3)
