-- SPDX-License-Identifier: BSD-3-Clause
SELECT name, checksum FROM cafmq.schema_functions
