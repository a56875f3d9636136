-- SPDX-License-Identifier: BSD-3-Clause
INSERT INTO cafmq.schema_functions AS f (name, checksum) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()
