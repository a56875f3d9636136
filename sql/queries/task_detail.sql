-- SPDX-License-Identifier: BSD-3-Clause
SELECT t.ordered, t.unique_key, t.lost_attempts,
       (extract(epoch FROM t.timeout) * 1e6)::bigint AS timeout_us,
       extract(epoch FROM t.deadline) * 1e6 AS deadline_us,
       (extract(epoch FROM t.backoff) * 1e6)::bigint AS backoff_us,
       (extract(epoch FROM t.backoff_cap) * 1e6)::bigint AS backoff_cap_us,
       p.json::text AS payload_json, octet_length(p.bytes) AS payload_bytes
  FROM cafmq.tasks t LEFT JOIN cafmq.payloads p ON p.id = t.id
 WHERE t.id = $1::uuid
