-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.expire_reservations($1)
