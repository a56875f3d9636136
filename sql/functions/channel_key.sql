-- SPDX-License-Identifier: BSD-3-Clause

-- Advisory-lock key of an ordered channel (a hash; a collision only serializes).
CREATE OR REPLACE FUNCTION cafmq.channel_key(p_name text, p_args text)
 RETURNS bigint
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $$
  SELECT hashtextextended(p_name || chr(31) || p_args, 7305)
$$;
