-- SPDX-License-Identifier: BSD-3-Clause
SELECT to_regclass('cafmq.schema_version') IS NOT NULL,
       EXISTS (SELECT 1 FROM pg_attribute a
                WHERE a.attrelid = to_regclass('cafmq.schema_version')
                  AND a.attname = 'checksum' AND NOT a.attisdropped),
       to_regclass('cafmq.schema_functions') IS NOT NULL
