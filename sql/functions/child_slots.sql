-- SPDX-License-Identifier: BSD-3-Clause

-- How many slots (cafmq.child_waits) a child with p_parents parents has:
-- one per parent up to 128. Parents that end at the same moment in
-- different transactions wait for each other only when they share a slot;
-- a batch of completions writes one row per slot it touches.
CREATE OR REPLACE FUNCTION cafmq.child_slots(p_parents bigint)
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $$
  SELECT least(p_parents, 128)::integer
$$;
