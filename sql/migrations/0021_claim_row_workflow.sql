-- SPDX-License-Identifier: BSD-3-Clause
-- A claimed task names its workflow, so that the runtime's events about it
-- do (a node's subscriber can follow one workflow).
ALTER TYPE cafmq.claim_row ADD ATTRIBUTE workflow_id uuid;
