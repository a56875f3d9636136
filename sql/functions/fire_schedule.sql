-- SPDX-License-Identifier: BSD-3-Clause

-- Spawns the ticks of one due schedule (local times in its zone, from the
-- runner that holds its row lock) and moves it to p_next; p_missed ticks
-- were left out by its catch-up policy. Returns the tasks spawned.
CREATE OR REPLACE FUNCTION cafmq.fire_schedule(
    p_name text,
    p_ticks timestamp without time zone[],
    p_next timestamp without time zone,
    p_missed bigint)
 RETURNS integer
 LANGUAGE plpgsql
AS $$
DECLARE
  v_schedule cafmq.schedules;
  v_spawned integer;
BEGIN
  SELECT * INTO v_schedule FROM cafmq.schedules s WHERE s.name = p_name;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  IF cardinality(p_ticks) > 0 THEN
    SELECT count(*) INTO v_spawned FROM cafmq.spawn((
    SELECT json_agg(v_schedule.spec || jsonb_build_object(
             'id', cafmq.time_ordered_uuid(),
             'unique_key', 'cafmq.schedule:' || p_name || '@'
                           || to_char((k.tick AT TIME ZONE v_schedule.time_zone)
                                        AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
             ORDER BY k.tick)
      FROM unnest(p_ticks) AS k (tick))) s
     WHERE s.created;
  ELSE
    v_spawned := 0;
  END IF;
  UPDATE cafmq.schedules s
     SET next_run_at = p_next AT TIME ZONE s.time_zone,
         last_tick_at = coalesce((SELECT max(k) FROM unnest(p_ticks) k)
                                   AT TIME ZONE s.time_zone, s.last_tick_at),
         ticks = s.ticks + v_spawned,
         missed = s.missed + p_missed,
         last_error = NULL
   WHERE s.name = p_name;
  RETURN v_spawned;
END $$;
