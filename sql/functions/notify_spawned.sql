-- SPDX-License-Identifier: BSD-3-Clause

-- Wakes runners of the channels that a spawn gave ready tasks (p_specs
-- that are neither reservations nor waiting for parents; of a batch with unique keys, only the
-- p_created ones): one notification per channel and call. Where the
-- channel's new tasks are few (at most 32) and each could be claimed by id
-- (unordered, no priority, due now), the payload names them after the
-- channel, separated by chr(31), the ids by commas:
--   'mail' || chr(31) || '0190...,0190...'
-- and a runner with free slots claims them by id (cafmq.claim_ids). Else
-- it is the channel's name alone, as from cafmq.notify_ready.
--
-- A task that a runtime dispatches directly (claimed in the statement
-- that spawns it, cafmq.spawn_claimed) is left out: its id is the setting
-- cafmq.dispatching meanwhile, and spawn_claimed notifies its channel
-- itself if the claim did not take it.
CREATE OR REPLACE FUNCTION cafmq.notify_spawned(
    p_specs cafmq.spawn_spec[], p_created uuid[] DEFAULT NULL)
 RETURNS void
 LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM pg_notify('cafmq_ready',
                    CASE WHEN count(*) <= 32 AND bool_and(c.by_id)
                         THEN c.channel_name || chr(31)
                              || string_agg(c.id::text, ',')
                         ELSE c.channel_name END)
     FROM (SELECT s.channel_name, s.id,
                  NOT s.ordered AND coalesce(s.priority, 0) = 0
                  AND coalesce(s.run_at_us / 1e6 <= extract(epoch FROM now()),
                               coalesce(s.delay_us, 0) <= 0) AS by_id
             FROM unnest(p_specs) s
            WHERE s.commit_us IS NULL
              AND coalesce(cardinality(s.parents), 0) = 0
              AND (p_created IS NULL OR s.id = ANY (p_created))
              AND s.id::text IS DISTINCT FROM
                  nullif(current_setting('cafmq.dispatching', true), '')) c
    GROUP BY c.channel_name;
END
$$;
