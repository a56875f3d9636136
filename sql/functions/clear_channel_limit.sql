-- SPDX-License-Identifier: BSD-3-Clause

-- Removes a channel's limits; false if it had none.
CREATE OR REPLACE FUNCTION cafmq.clear_channel_limit(p_channel text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $$
BEGIN
  DELETE FROM cafmq.channel_limits l WHERE l.channel_name = p_channel;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM cafmq.notify_ready(ARRAY[p_channel]);
  RETURN true;
END $$;
