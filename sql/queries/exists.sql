-- SPDX-License-Identifier: BSD-3-Clause
SELECT EXISTS (SELECT 1 FROM cafmq.tasks WHERE id = $1::uuid)
