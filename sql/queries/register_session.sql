-- SPDX-License-Identifier: BSD-3-Clause
SELECT cafmq.register_session($1)
