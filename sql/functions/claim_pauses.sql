-- SPDX-License-Identifier: BSD-3-Clause

-- What the cluster-wide pauses (cafmq.pauses) leave a claim: p_names
-- without the paused task names, and p_paused (the runner's own paused
-- channels) with the paused channel names added. cafmq.claim and
-- cafmq.claim_ids call it when the table has a row: it is empty in the
-- usual case.
CREATE OR REPLACE FUNCTION cafmq.claim_pauses(
    p_names text[], p_paused text[], OUT names text[], OUT paused text[])
 LANGUAGE plpgsql
 STABLE
AS $$
BEGIN
  names := ARRAY(SELECT n FROM unnest(p_names) n
                  WHERE NOT EXISTS (SELECT 1 FROM cafmq.pauses p
                                     WHERE p.kind = 'task' AND p.value = n));
  paused := coalesce(p_paused, '{}')
            || ARRAY(SELECT p.value FROM cafmq.pauses p
                      WHERE p.kind = 'channel');
END
$$;
