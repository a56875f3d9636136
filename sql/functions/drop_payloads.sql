-- SPDX-License-Identifier: BSD-3-Clause

-- The statement-level trigger that deletes the payload rows of deleted
-- tasks (a foreign key's check locked the task row once per inserted
-- payload, a third of a batch spawn's time).
CREATE OR REPLACE FUNCTION cafmq.drop_payloads()
 RETURNS trigger
 LANGUAGE plpgsql
AS $$
BEGIN
  DELETE FROM cafmq.payloads p USING gone g WHERE p.id = g.id;
  RETURN NULL;
END
$$;
