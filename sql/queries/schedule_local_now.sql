-- SPDX-License-Identifier: BSD-3-Clause
-- The database's wall-clock time in zone $1 (an unknown zone is an error).
SELECT (now() AT TIME ZONE $1::text)::text
