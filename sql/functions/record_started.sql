-- SPDX-License-Identifier: BSD-3-Clause

-- Records which attempts of p_node have started (NULL: unchanged).
CREATE OR REPLACE FUNCTION cafmq.record_started(p_node text, p_ids uuid[])
 RETURNS void
 LANGUAGE sql
AS $$
  UPDATE cafmq.sessions SET started = p_ids
   WHERE node = p_node AND p_ids IS NOT NULL
$$;
