-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.hand_back_leftovers($1)
