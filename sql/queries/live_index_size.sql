-- SPDX-License-Identifier: BSD-3-Clause
-- The size of an index of cafmq.tasks_live, by name; no row for any other.
SELECT pg_relation_size(i.indexrelid)
  FROM pg_index i
  JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'cafmq.tasks_live'::regclass
   AND c.relname = $1
