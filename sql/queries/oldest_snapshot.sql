-- SPDX-License-Identifier: BSD-3-Clause
SELECT (extract(epoch FROM cafmq.oldest_snapshot()) * 1000)::bigint
