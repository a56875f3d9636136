-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.record_started($1, $2::uuid[])
