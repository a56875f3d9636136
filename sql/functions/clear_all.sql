-- SPDX-License-Identifier: BSD-3-Clause

-- Deletes every task.
CREATE OR REPLACE FUNCTION cafmq.clear_all()
 RETURNS bigint
 LANGUAGE sql
AS $$
  WITH gone AS (DELETE FROM cafmq.tasks RETURNING 1) SELECT count(*) FROM gone
$$;
