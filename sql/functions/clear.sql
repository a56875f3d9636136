-- SPDX-License-Identifier: BSD-3-Clause

-- Deletes every task (any state) of these channel names, all args.
CREATE OR REPLACE FUNCTION cafmq.clear(p_channel_names text[])
 RETURNS bigint
 LANGUAGE sql
AS $$
  WITH gone AS (
    DELETE FROM cafmq.tasks t WHERE t.channel_name = ANY (p_channel_names)
    RETURNING 1)
  SELECT count(*) FROM gone
$$;
