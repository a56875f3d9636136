-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.cancel($1::uuid)
