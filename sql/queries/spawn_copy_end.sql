-- SPDX-License-Identifier: BSD-3-Clause
-- After a COPY spawn: wakes the runners of the channels that got ready tasks
-- (one notification per channel). $1: a JSON array of channel names.
SELECT cafmq.notify_ready(ARRAY(SELECT json_array_elements_text($1::json)))
