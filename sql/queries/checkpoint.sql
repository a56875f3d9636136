-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.checkpoint($1::uuid, $2, $3, decode($4, 'base64'), $5, make_interval(secs => $6::bigint / 1e6))
