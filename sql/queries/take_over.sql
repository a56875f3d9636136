-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.take_over($1, make_interval(secs => $2::bigint / 1e6))
