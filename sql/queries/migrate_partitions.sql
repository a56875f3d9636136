-- SPDX-License-Identifier: BSD-3-Clause
-- The history's partitions for today and the two days ahead, as prune
-- makes them, once the migrations and functions are in: a runner's first
-- completions then never land in the default partition while its
-- maintenance attaches today's (which fails them: "violates partition
-- constraint").
SELECT cafmq.add_history_partitions(2)
