-- SPDX-License-Identifier: BSD-3-Clause
-- Before a COPY spawn: the transaction's time (the rows' now(), in
-- microseconds since the epoch), after taking the ordering lock of each
-- ordered channel in key order, as cafmq.spawn does. $1: a JSON array of
-- [channel_name, channel_args] pairs.
SELECT (extract(epoch FROM now()) * 1000000)::bigint,
       (SELECT count(*)
          FROM (SELECT pg_advisory_xact_lock(k)
                  FROM (SELECT DISTINCT cafmq.channel_key(c ->> 0, c ->> 1) AS k
                          FROM json_array_elements($1::json) AS c
                         ORDER BY 1) keys) locked)
