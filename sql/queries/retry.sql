-- SPDX-License-Identifier: BSD-3-Clause
SELECT id::text, outcome FROM cafmq.retry($1::uuid[])
