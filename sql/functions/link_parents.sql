-- SPDX-License-Identifier: BSD-3-Clause

-- Records who waits for whom after a spawn wrote its tasks (p_created: the
-- ids created, NULL: all; a spec whose unique key a live task holds
-- stands for that task, as parent, and is not created). Each created
-- child's parents are dealt into its slots (cafmq.child_slots, each with at
-- least one parent: cafmq.child_waits), and the child was written waiting for
-- all its slots. A parent spawned earlier is either live, and then marked
-- as a parent under its row lock (a completion that waits for that lock
-- sees the mark, and the child's rows, when this commits), or it ended
-- already, and the children follow its end at once
-- (cafmq.release_children): counted down, readied, or cancelled.
CREATE OR REPLACE FUNCTION cafmq.link_parents(
    p_specs cafmq.spawn_spec[], p_created uuid[])
 RETURNS void
 LANGUAGE plpgsql
AS $$
DECLARE
  v_children uuid[];
  v_earlier uuid[];
  v_live uuid[];
  v_locked boolean := false;
BEGIN
  v_children := ARRAY(SELECT s.id FROM unnest(p_specs) s
                       WHERE cardinality(s.parents) > 0
                         AND (p_created IS NULL
                              OR s.id IN (SELECT unnest(p_created))));
  WITH named AS (
    SELECT DISTINCT c.id AS child, coalesce(h.id, p.parent) AS parent
      FROM unnest(p_specs) c, unnest(c.parents) AS p (parent)
      LEFT JOIN (SELECT q.id AS spec, t.id FROM unnest(p_specs) q
                   JOIN cafmq.tasks_live t ON t.unique_key = q.unique_key
                  WHERE p_created IS NOT NULL
                    AND q.id NOT IN (SELECT unnest(p_created))
                    AND t.state IN ('uncommitted', 'waiting', 'pending',
                                    'running')) h ON h.spec = p.parent
     WHERE c.id IN (SELECT unnest(v_children))),
  dealt AS (
    SELECT n.child, n.parent,
           ((row_number() OVER (PARTITION BY n.child ORDER BY n.parent) - 1)
            % cafmq.child_slots(count(*) OVER (PARTITION BY n.child)))::smallint
             AS slot
      FROM named n),
  edges AS (
    INSERT INTO cafmq.task_parents (child, parent, slot)
    SELECT d.child, d.parent, d.slot FROM dealt d
    RETURNING child, slot)
  INSERT INTO cafmq.child_waits (child, slot, parents_left)
  SELECT e.child, e.slot, count(*) FROM edges e GROUP BY 1, 2;
  IF p_created IS NOT NULL AND cardinality(p_created) < cardinality(p_specs)
  THEN
    -- A parent stood for by a holder may be named twice now.
    UPDATE cafmq.tasks_live t
       SET parents_left = (SELECT count(*) FROM cafmq.child_waits w
                            WHERE w.child = t.id)
     WHERE t.id = ANY (v_children);
  END IF;
  v_earlier := ARRAY(SELECT DISTINCT e.parent FROM cafmq.task_parents e
                      WHERE e.child IN (SELECT unnest(v_children))
                        AND CASE WHEN p_created IS NULL
                              THEN e.parent NOT IN (SELECT s.id
                                                      FROM unnest(p_specs) s)
                              ELSE e.parent NOT IN (SELECT unnest(p_created))
                            END);
  IF cardinality(v_earlier) = 0 THEN
    RETURN;
  END IF;
  -- The live ones are locked in id order, without waiting: a completion of
  -- several of them locks them in the order its plan meets them, so a wait
  -- here could close a cycle with it (a deadlock). A lock held elsewhere
  -- rolls this attempt back, which lets go of the locks it took, and after
  -- a short pause it starts again; after about 2.5 s of that it waits.
  FOR v_try IN 1 .. 50 LOOP
    BEGIN
      v_live := ARRAY(SELECT t.id FROM cafmq.tasks_live t
                       WHERE t.id = ANY (v_earlier)
                       ORDER BY t.id FOR NO KEY UPDATE NOWAIT);
      v_locked := true;
      EXIT;
    EXCEPTION WHEN lock_not_available THEN
      PERFORM pg_sleep(0.002 * v_try);
    END;
  END LOOP;
  IF NOT v_locked THEN
    v_live := ARRAY(SELECT t.id FROM cafmq.tasks_live t
                     WHERE t.id = ANY (v_earlier)
                     ORDER BY t.id FOR NO KEY UPDATE);
  END IF;
  UPDATE cafmq.tasks_live t SET has_children = true
   WHERE t.id = ANY (v_live) AND NOT t.has_children;
  IF cardinality(v_live) < cardinality(v_earlier) THEN
    PERFORM cafmq.release_children(
      ARRAY(SELECT x FROM unnest(v_earlier) x
             WHERE x NOT IN (SELECT unnest(v_live))),
      v_children);
  END IF;
END
$$;
