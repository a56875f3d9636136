-- SPDX-License-Identifier: BSD-3-Clause

-- Deletes every task of the given channels, live or in the history. A
-- waiting child in another channel follows a deleted parent as of a
-- cancelled one.
CREATE OR REPLACE FUNCTION cafmq.clear(p_channel_names text[])
 RETURNS bigint
 LANGUAGE plpgsql
AS $$
DECLARE
  v_live bigint;
  v_finished bigint;
  v_parents uuid[];
BEGIN
  WITH live AS (
    DELETE FROM cafmq.tasks_live t WHERE t.channel_name = ANY (p_channel_names)
    RETURNING t.id, t.has_children)
  SELECT count(*), array_agg(l.id) FILTER (WHERE l.has_children)
    INTO v_live, v_parents FROM live l;
  DELETE FROM cafmq.tasks_history t
   WHERE t.channel_name = ANY (p_channel_names);
  GET DIAGNOSTICS v_finished = ROW_COUNT;
  IF v_parents IS NOT NULL THEN
    PERFORM cafmq.release_children(v_parents);
  END IF;
  RETURN v_live + v_finished;
END
$$;
