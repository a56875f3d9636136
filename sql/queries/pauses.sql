-- SPDX-License-Identifier: BSD-3-Clause
SELECT kind, value, extract(epoch FROM paused_at) * 1e6
  FROM cafmq.pauses ORDER BY paused_at, kind, value
