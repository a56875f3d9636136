-- SPDX-License-Identifier: BSD-3-Clause

-- The advisory lock key of a node's session.
CREATE OR REPLACE FUNCTION cafmq.session_key(p_node text)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $$
  SELECT hashtextextended('cafmq.session' || chr(31) || p_node, 7305)
$$;
