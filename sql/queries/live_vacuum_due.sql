-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.live_vacuum_due($1)
