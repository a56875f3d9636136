-- SPDX-License-Identifier: BSD-3-Clause
-- Direct dispatch (cafmq.spawn_claimed): spawns the spec $1 (a JSON array
-- of one) and claims it by id for this runner ($2 node, $3 names, $4
-- channels, $5 local pauses, $6 lease in µs, $7 poison bound), in one
-- statement. The claim's columns as queries/claim_columns.sql gives them (no
-- pickup sample: the task waited for nothing), and the spawn's result.
SELECT x.spawned_id, x.created, c.id, c.name, c.channel_name,
       c.channel_args, c.attempt, c.max_attempts, c.ordered,
       extract(epoch FROM c.timeout) * 1e6 AS timeout_us,
       extract(epoch FROM c.deadline - now()) * 1e6 AS deadline_in_us,
       c.payload_json, c.payload_bytes, c.cursor_name, c.cursor_args,
       extract(epoch FROM c.wait) * 1e6 AS wait_us, c.ended, c.error,
       c.parents, c.workflow_id, NULL::double precision AS pickup_us
  FROM cafmq.spawn_claimed($1::json, $2, $3::text[], $4::text[], $5::text[],
                           make_interval(secs => $6::bigint / 1e6), $7) x
 CROSS JOIN LATERAL (SELECT (x.claimed).*) c
