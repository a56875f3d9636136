-- SPDX-License-Identifier: BSD-3-Clause

-- True if attempt p_attempt is in the log p_earlier (a task's
-- earlier_attempts, appended in attempt order): a retried failure logs
-- its attempt when it happens, so the attempt a task ended with may be
-- there already (a task cancelled while it waited for its retry).
CREATE OR REPLACE FUNCTION cafmq.attempt_logged(p_earlier jsonb,
                                                p_attempt integer)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
AS $$
  SELECT p_attempt <= coalesce((p_earlier -> -1 ->> 'attempt')::int, 0)
$$;
