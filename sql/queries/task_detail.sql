-- SPDX-License-Identifier: BSD-3-Clause
SELECT t.ordered, t.unique_key, t.lost_attempts,
       (extract(epoch FROM t.timeout) * 1e6)::bigint AS timeout_us,
       extract(epoch FROM t.deadline) * 1e6 AS deadline_us,
       (extract(epoch FROM t.backoff) * 1e6)::bigint AS backoff_us,
       (extract(epoch FROM t.backoff_cap) * 1e6)::bigint AS backoff_cap_us,
       t.payload_json::text AS payload_json,
       octet_length(t.payload_bytes) AS payload_bytes,
       t.workflow_id::text AS workflow_id
  FROM cafmq.tasks t
 WHERE t.id = $1::uuid
