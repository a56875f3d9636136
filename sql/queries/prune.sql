-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.prune(make_interval(secs => $1::bigint / 1e6), $2)
