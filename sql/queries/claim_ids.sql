-- SPDX-License-Identifier: BSD-3-Clause
-- The claim by id (cafmq.claim_ids) of tasks $8 for node $1 of names $2
-- (channels $3, local pauses $4), leased for $6 µs, with poison bound $7.
-- Follows queries/claim_columns.sql, whose $5 is the pickup sample. A
-- statement of its own rather than a branch of claim.sql: planning both
-- branches cost each claim by id about 0.07 ms.
  FROM cafmq.claim_ids($1, $2::text[], $3::text[], $4::text[], $8::uuid[],
                       make_interval(secs => $6::bigint / 1e6), $7) c
