-- SPDX-License-Identifier: BSD-3-Clause

-- The claim by id: a runner with free slots that hears a spawn's
-- notification naming its ready tasks (cafmq.notify_spawned) claims those
-- tasks through the primary key, without the walk over the channels. It
-- takes a task only where the fair claim (cafmq.claim) would let this
-- runner take it now: pending and ready, unordered, a name in p_names (and
-- a channel in p_channels, if given), its channel neither paused (p_paused
-- or cafmq.pauses) nor limited, and no prioritized task waiting (a claim
-- serves those first). Each is locked SKIP LOCKED and started by
-- claim_start, as in a fair claim; the walk's cursor is left alone.
--
-- The lookup compares state::text, as the fenced statements do (see
-- complete.sql): with `state = 'pending'` a generic plan made while the
-- statistics saw few live tasks (a held snapshot, its dead row versions
-- filling the pages) could walk tasks_unordered_queue for its order, and
-- so every dead entry of it, in each claim by id (40-120 ms each under a
-- held snapshot, until the next analyze). Without the index's predicate
-- the ids go through the primary key.
--
-- The last row has id NULL, and its `wait` is 0 when the fair claim must
-- follow: a named task is still pending but was not taken here (held back
-- by a rule above, or locked by another claim). A task another runner has
-- taken already needs nothing more, nor does one of a name this runner
-- does not run (runners that share a channel but not its task names each
-- hear every spawn of it; a fair claim after each, slow under a held
-- snapshot, would take nothing).
CREATE OR REPLACE FUNCTION cafmq.claim_ids(
    p_node text,
    p_names text[],
    p_channels text[],
    p_paused text[],
    p_ids uuid[],
    p_lease interval,
    p_max_lost integer)
 RETURNS SETOF cafmq.claim_row
 LANGUAGE plpgsql
AS $$
DECLARE
  v_ids uuid[] := '{}';
  v_last cafmq.claim_row;
  -- The names this runner runs, paused ones included.
  v_runs text[] := p_names;
BEGIN
  IF p_channels = '{}' THEN
    p_channels := NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM cafmq.pauses) THEN
    SELECT x.names, x.paused INTO p_names, p_paused
      FROM cafmq.claim_pauses(p_names, p_paused) x;
  END IF;
  -- A waiting prioritized task goes first (claim_ready's v_prio): the fair
  -- claim takes it.
  IF NOT EXISTS (SELECT 1 FROM cafmq.tasks_live t
                  WHERE t.state = 'pending' AND NOT t.ordered
                    AND t.priority > 0) THEN
    v_ids := ARRAY(
      SELECT t.id FROM cafmq.tasks_live t
       WHERE t.id = ANY (p_ids) AND t.state::text = 'pending'
         AND NOT t.ordered AND t.run_at <= now() AND t.name = ANY (p_names)
         AND (p_channels IS NULL OR t.channel_name = ANY (p_channels))
         AND (p_paused IS NULL OR t.channel_name <> ALL (p_paused))
         AND NOT EXISTS (SELECT 1 FROM cafmq.channel_limits l
                          WHERE l.channel_name = t.channel_name)
       ORDER BY t.run_at, t.seq
       FOR UPDATE SKIP LOCKED);
  END IF;
  IF cardinality(v_ids) > 0 THEN
    RETURN QUERY SELECT * FROM cafmq.claim_start(v_ids, p_node, p_lease,
                                                 p_max_lost);
    PERFORM cafmq.publish_status(v_ids);
  END IF;
  v_last.wait := CASE WHEN EXISTS (
                   SELECT 1 FROM cafmq.tasks_live t
                    WHERE t.id = ANY (p_ids) AND t.id <> ALL (v_ids)
                      AND t.state = 'pending' AND t.name = ANY (v_runs))
                 THEN interval '0' END;
  RETURN NEXT v_last;
END
$$;
