-- SPDX-License-Identifier: BSD-3-Clause
SELECT index_name, action FROM cafmq.live_index_upkeep($1)
