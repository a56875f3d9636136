SELECT version, name, checksum FROM cafmq.schema_version ORDER BY version
