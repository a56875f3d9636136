-- SPDX-License-Identifier: BSD-3-Clause
-- The fair claim (cafmq.claim) for node $1 of names $2 (channels $3, local
-- pauses $4), at most $8 tasks, leased for $6 µs, with poison bound $7,
-- its walk from the cursor ($9, $10). Follows queries/claim_columns.sql,
-- whose $5 is the pickup sample.
  FROM cafmq.claim($1, $2::text[], $3::text[], $4::text[], $8,
                   make_interval(secs => $6::bigint / 1e6), $7, $9, $10) c
