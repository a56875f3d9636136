-- Claim plans that do not depend on the statistics of the moment.
--
-- Generic plans are made once per session from the statistics of that
-- moment. After a VACUUM of an idle queue the partial indexes of live tasks
-- record zero rows; a session that starts then planned the fill pass as a
-- scan of every ready task followed by a sort, and kept that plan while the
-- queue grew: each claim read and sorted the whole backlog. Every ordered
-- read of a claim has an index in its order, so the claim never sorts.
ALTER FUNCTION cafmq.claim(text, text[], text[], integer, interval, text, text)
  SET enable_sort = off;
