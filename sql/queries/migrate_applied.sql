-- SPDX-License-Identifier: BSD-3-Clause
SELECT version, name, checksum FROM cafmq.schema_version ORDER BY version
