-- SPDX-License-Identifier: BSD-3-Clause

-- A time-ordered id (UUID version 7: milliseconds of the database clock,
-- 12 bits of the millisecond's fraction, then random bits), like the
-- library's uuid::time_ordered(): listings page on the primary key, newest
-- first.
CREATE OR REPLACE FUNCTION cafmq.time_ordered_uuid()
 RETURNS uuid
 LANGUAGE sql
AS $$
  SELECT (lpad(to_hex(floor(extract(epoch FROM c) * 1000)::bigint), 12, '0')
          || '7'
          || lpad(to_hex((extract(microseconds FROM c)::bigint % 1000)
                         * 4096 / 1000), 3, '0')
          || substr(replace(gen_random_uuid()::text, '-', ''), 17, 16))::uuid
    FROM clock_timestamp() c
$$;
