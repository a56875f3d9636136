-- SPDX-License-Identifier: BSD-3-Clause
SELECT id, created FROM cafmq.spawn($1::json)
