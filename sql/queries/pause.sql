-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.pause($1, $2)
