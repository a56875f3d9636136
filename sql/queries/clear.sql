-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.clear($1::text[])
