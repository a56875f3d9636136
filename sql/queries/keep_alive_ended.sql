-- SPDX-License-Identifier: BSD-3-Clause
-- The attempts of a renewal ($1 ids, $2 attempts) that it did not find
-- running because their outcome was written meanwhile (the renewal waited
-- for that write's row lock): completed, failed or cancelled, a retry
-- scheduled (pending, same attempt), or given back (pending, one attempt
-- less). Their lease was not lost. Run after the renewal, with a snapshot
-- of its own, only when the renewal missed some.
SELECT t.id
  FROM cafmq.tasks t
  JOIN unnest($1::uuid[], $2::integer[]) AS f (id, attempt) ON t.id = f.id
 WHERE (t.attempt = f.attempt AND t.state <> 'running')
    OR (t.attempt = f.attempt - 1 AND t.state = 'pending')
