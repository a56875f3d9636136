-- SPDX-License-Identifier: BSD-3-Clause

-- The filter of a listing, a bulk retry or a bulk cancel: every argument
-- that is not NULL must match (states, name, channel name, created at least
-- / at most this many microseconds ago). Inlined into the caller's query.
-- `t` is a row of cafmq.tasks, the view of live and finished tasks.
CREATE OR REPLACE FUNCTION cafmq.task_matches(
    t cafmq.tasks,
    p_states cafmq.task_state[],
    p_name text,
    p_channel text,
    p_older_us bigint,
    p_newer_us bigint)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $$
  SELECT (p_states IS NULL OR t.state = ANY (p_states))
     AND (p_name IS NULL OR t.name = p_name)
     AND (p_channel IS NULL OR t.channel_name = p_channel)
     AND (p_older_us IS NULL
          OR t.created_at <= now() - p_older_us * interval '1 microsecond')
     AND (p_newer_us IS NULL
          OR t.created_at >= now() - p_newer_us * interval '1 microsecond')
$$;
