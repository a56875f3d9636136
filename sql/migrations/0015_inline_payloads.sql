-- Payloads inline in the task row (storage v2). A payload row of its own,
-- with its primary key, cost a batch spawn of 20,000 tasks 55 to 88 ms of
-- its server time, and every claim a join. PostgreSQL keeps the row small
-- by itself: a row over about 2 kB has its large values compressed or moved
-- to TOAST, and a row version that does not change them (the claim, the
-- completion) reuses the TOAST pointer; a smaller payload is copied into
-- each row version.
ALTER TABLE cafmq.tasks
  ADD COLUMN payload_json jsonb,
  ADD COLUMN payload_bytes bytea;
UPDATE cafmq.tasks t
   SET payload_json = p.json, payload_bytes = p.bytes
  FROM cafmq.payloads p
 WHERE p.id = t.id AND (p.json IS NOT NULL OR p.bytes IS NOT NULL);
DROP TRIGGER tasks_drop_payloads ON cafmq.tasks;
DROP FUNCTION cafmq.drop_payloads();
DROP TABLE cafmq.payloads;
