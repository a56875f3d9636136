-- SPDX-License-Identifier: BSD-3-Clause
SELECT coalesce(max(version), 0) FROM cafmq.schema_version
