-- SPDX-License-Identifier: BSD-3-Clause
INSERT INTO cafmq.schema_version (version, name, checksum) VALUES ($1, $2, $3)
