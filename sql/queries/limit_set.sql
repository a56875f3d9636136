-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.set_channel_limit($1::text, $2::integer, $3::integer,
                               make_interval(secs => $4::bigint / 1e6))
