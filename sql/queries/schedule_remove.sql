-- SPDX-License-Identifier: BSD-3-Clause
DELETE FROM cafmq.schedules WHERE name = $1::text
