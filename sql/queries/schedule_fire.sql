-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.fire_schedule($1::text, $2::timestamp[], $3::timestamp, $4::bigint)
