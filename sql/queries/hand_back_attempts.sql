-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.hand_back_attempts($1::uuid[], $2::integer[])
