-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.clear_channel_limit($1::text)
