#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Measures (asserts nothing) what retention costs with N finished tasks
# (default 10,000,000) in the history: the tasks finish one every STEP
# (default 100 ms) up to now, each UTC day in its own partition as the
# maintenance actor makes them; then `cafmq.prune` with a retention of DAYS
# (default 10) removes the days past it. Prints the time of that call,
# what it removed, how many rows of the history were deleted one by one
# (pg_stat_all_tables, 0 when whole partitions were dropped), the history's
# size before and after, the time of a second call (nothing to do) and of
# the `cafmq prune` command. In a fresh database of CAFMQ_DATABASE_URL.
#
#   bench/prune_history.sh CLI [N] [STEP] [DAYS]     (CLI: build/tools/cafmq)
set -euo pipefail
cli=$1 n=${2:-10000000} step=${3:-100 ms} days=${4:-10}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
source "$here/../tests/scripts/dashboard_lib.sh"
trap drop_database EXIT
fresh_database cafmq_prune
sql() { psql "$url" -v ON_ERROR_STOP=1 -qtAc "$1"; }
now() { date +%s.%N; }
since() { awk "BEGIN { printf \"%.3f\", $(now) - $1 }"; }

# The partitions of the days the tasks finish on, made before the rows come
# (a runner's maintenance makes each one days ahead).
sql "DO \$\$
DECLARE d date;
BEGIN
  FOR d IN SELECT generate_series((now() - $n * interval '$step')::date,
                                  (now() AT TIME ZONE 'UTC')::date, '1 day')::date
  LOOP
    CONTINUE WHEN to_regclass('cafmq.tasks_history_' || to_char(d, 'YYYYMMDD')) IS NOT NULL;
    EXECUTE format('CREATE TABLE cafmq.%I PARTITION OF cafmq.tasks_history
                    FOR VALUES FROM (%L) TO (%L)',
                   'tasks_history_' || to_char(d, 'YYYYMMDD'),
                   d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC');
  END LOOP;
END \$\$"
t0=$(now)
psql "$url" -v ON_ERROR_STOP=1 -q -v n="$n" -v step="'$step'" \
  -f "$here/../tests/scripts/finished_tasks.sql"
echo "inserted $n finished tasks in $(since "$t0") s"
sql "VACUUM ANALYZE cafmq.tasks_history"
size() {
  sql "SELECT pg_size_pretty(sum(pg_total_relation_size(relid)))
         FROM pg_partition_tree('cafmq.tasks_history')"
}
deleted() {
  sql "SELECT coalesce(sum(s.n_tup_del), 0) FROM pg_stat_all_tables s
         JOIN pg_partition_tree('cafmq.tasks_history') p ON p.relid = s.relid"
}
echo "history: $(sql "SELECT count(*) FROM cafmq.tasks_history") tasks in" \
  "$(sql "SELECT count(*) - 1 FROM pg_partition_tree('cafmq.tasks_history')") partitions, $(size)"
del0=$(deleted)
# The statement itself, timed by psql (the server's time plus a local round
# trip), as a runner's maintenance calls it; then the command an operator runs.
prune_sql() {
  psql "$url" -v ON_ERROR_STOP=1 -qtA -c '\timing on' \
    -c "SELECT cafmq.prune(interval '$days days', 10000)" |
    awk '/^Time:/ { t = $2 } !/^Time:/ && NF { r = $1 } END { print r " removed in " t " ms" }'
}
echo "cafmq.prune('$days days'): $(prune_sql)"
sleep 1 # the statistics collector's report
echo "rows deleted one by one: $(($(deleted) - del0)); history now:" \
  "$(sql "SELECT count(*) FROM cafmq.tasks_history") tasks, $(size)"
echo "again (nothing past the retention): $(prune_sql)"
t0=$(now)
CAFMQ_DATABASE_URL=$url "$cli" prune --older-than "${days}d" --json >/dev/null
echo "cafmq prune --older-than ${days}d (the command, connecting included): $(since "$t0") s"
