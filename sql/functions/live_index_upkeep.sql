-- SPDX-License-Identifier: BSD-3-Clause

-- The indexes of cafmq.tasks_live that the maintenance rebuilds after a
-- held snapshot, largest first. While a snapshot is held, vacuum removes
-- no dead row version, so every claim and ending adds index entries that
-- stay; once it is released, vacuum empties those pages and recycles them,
-- but a btree never gives pages back: only a rebuild does. An index is
-- rebuilt ('rebuild') when it is over p_min_bytes and over eight times
-- what the table's live rows would need at 64 bytes each (so an index
-- that is large because the queue holds that many tasks is left alone).
-- An index that a failed REINDEX CONCURRENTLY left behind (invalid, named
-- *_ccnew or *_ccold) is to be dropped ('drop').
CREATE OR REPLACE FUNCTION cafmq.live_index_upkeep(p_min_bytes bigint)
 RETURNS TABLE (index_name text, action text)
 LANGUAGE sql
 STABLE
AS $$
  SELECT c.relname::text,
         CASE WHEN i.indisvalid THEN 'rebuild' ELSE 'drop' END
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_class t ON t.oid = i.indrelid
   WHERE i.indrelid = 'cafmq.tasks_live'::regclass
     AND CASE WHEN i.indisvalid
              THEN pg_relation_size(c.oid) > p_min_bytes
                   AND pg_relation_size(c.oid)
                       > 8 * 64 * greatest(t.reltuples, 0)::bigint
              ELSE c.relname ~ '_cc(new|old)[0-9]*$'
         END
   ORDER BY pg_relation_size(c.oid) DESC
$$;
