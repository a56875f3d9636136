-- SPDX-License-Identifier: BSD-3-Clause

-- Deletes every task (any state, live or in the history) of these channel
-- names, all args.
CREATE OR REPLACE FUNCTION cafmq.clear(p_channel_names text[])
 RETURNS bigint
 LANGUAGE sql
AS $$
  WITH live AS (
    DELETE FROM cafmq.tasks_live t WHERE t.channel_name = ANY (p_channel_names)
    RETURNING 1),
  finished AS (
    DELETE FROM cafmq.tasks_history t
     WHERE t.channel_name = ANY (p_channel_names)
    RETURNING 1)
  SELECT (SELECT count(*) FROM live) + (SELECT count(*) FROM finished)
$$;
