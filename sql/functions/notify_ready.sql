-- SPDX-License-Identifier: BSD-3-Clause

-- Wakes runners of these channels; one notification per channel and commit.
CREATE OR REPLACE FUNCTION cafmq.notify_ready(p_channels text[])
 RETURNS void
 LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_notify('cafmq_ready', c)
    FROM (SELECT DISTINCT unnest(p_channels) AS c) d;
END
$$;
