-- SPDX-License-Identifier: BSD-3-Clause
UPDATE cafmq.schema_version v SET checksum = b.checksum
  FROM unnest($1::integer[], $2::text[], $3::text[]) AS b (version, name, checksum)
 WHERE v.version = b.version AND v.name = b.name AND v.checksum IS NULL
