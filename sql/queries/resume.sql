-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.resume($1, $2)
