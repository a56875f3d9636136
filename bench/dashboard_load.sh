#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Measures (asserts nothing) the dashboard's page load with N finished tasks
# (default 1,000,000) in the history (cafmq.tasks_history): the HTTP time of the page and of each
# API call it makes (median of 5 with curl), and in headless Chromium the
# page's own timings until the first rows show; then EXPLAIN ANALYZE of
# the listing and stats queries. In a fresh database of CAFMQ_DATABASE_URL.
#
#   bench/dashboard_load.sh CLI [N]     (build/tools/cafmq)
set -euo pipefail
cli=$1 n=${2:-1000000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
source "$here/../tests/scripts/dashboard_lib.sh"
tmp=$(mktemp -d /tmp/cafmq-dashload.XXXXXX)
pid=
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  drop_database
  rm -rf "$tmp"
}
trap cleanup EXIT
fresh_database cafmq_dashload
sql() { psql "$url" -v ON_ERROR_STOP=1 -qtAc "$1"; }

# N finished tasks, one every 100 ms up to now (tests/scripts/finished_tasks.sql:
# one INSERT ... SELECT generate_series, time-ordered ids); plus 20 pending
# for the live counts.
start=$(date +%s.%N)
psql "$url" -v ON_ERROR_STOP=1 -q -v n="$n" -v step="'100 ms'" \
  -f "$here/../tests/scripts/finished_tasks.sql"
sql "SELECT count(*) FROM (SELECT cafmq.spawn('send_email', jsonb_build_object('to', 'user' || i || '@example.com'),
                                              run_at => now() + interval '1 hour')
                           FROM generate_series(1, 20) i) x" >/dev/null
sql "VACUUM ANALYZE cafmq.tasks_live, cafmq.tasks_history"
printf 'inserted %s finished tasks in %.1f s; table %s, indexes %s\n' "$n" \
  "$(awk "BEGIN { print $(date +%s.%N) - $start }")" \
  "$(sql "SELECT pg_size_pretty(sum(pg_table_size(relid))) FROM pg_partition_tree('cafmq.tasks_history')")" \
  "$(sql "SELECT pg_size_pretty(sum(pg_indexes_size(relid))) FROM pg_partition_tree('cafmq.tasks_history')")"

token=bench
ok=1
serve_dashboard "$tmp/dashboard.log" --token $token || ok=0
pid=$dashboard_pid
[[ $ok == 1 ]] || { cat "$tmp/dashboard.log"; exit 1; }

# Median of 5 of curl's time_total, in ms.
median() {
  local times=()
  for _ in 1 2 3 4 5; do
    times+=("$(curl -s -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $token" "$1")")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 3p | awk '{printf "%.1f", $1 * 1000}'
}
first_next=$(curl -s -H "Authorization: Bearer $token" "$base/api/tasks?limit=50" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["next"])')
deep=$(sql "SELECT id FROM cafmq.tasks ORDER BY id OFFSET $((n / 2)) LIMIT 1")
echo
echo "| request | median ms |"
echo "| --- | --- |"
for path in "/" "/api/stats" "/api/tasks?limit=50" "/api/tasks?limit=50&after=$first_next" \
            "/api/tasks?limit=50&after=$deep" "/api/tasks?limit=50&state=failed" \
            "/api/tasks?limit=50&state=cancelled&name=sync_crm" \
            "/api/tasks?limit=50&state=pending" "/api/tasks?limit=50&channel=billing" \
            "/api/tasks?limit=50&older_than=1d" \
            "/api/tasks/$deep" "/api/stats?finished=1"; do
  echo "| \`${path//$deep/MIDDLE}\` | $(median "$base$path") |"
done

echo
python3 "$here/dashboard_load.py" "$base" "$token"

echo
echo "EXPLAIN ANALYZE of the listing (sql/queries/list_tasks.sql) and the stats"
echo "(queue_stats.sql) as the dashboard runs them:"
explain() {  # NAME FILE ARGS...
  local name=$1 file=$2; shift 2
  echo
  echo "-- $name"
  psql "$url" -qAt <<SQL
PREPARE q AS $(grep -v '^--' "$file");
EXPLAIN (ANALYZE, BUFFERS) EXECUTE q($*);
SQL
}
list=$here/../sql/queries/list_tasks.sql
explain "first page" "$list" "NULL, NULL, NULL, NULL, NULL, NULL, 51"
explain "a page in the middle" "$list" "NULL, NULL, NULL, NULL, NULL, '$deep', 51"
explain "state=failed" "$list" "'{failed}', NULL, NULL, NULL, NULL, NULL, 51"
explain "state=pending (20 of them, all newest)" "$list" "'{pending}', NULL, NULL, NULL, NULL, NULL, 51"
explain "state=running (none)" "$list" "'{running}', NULL, NULL, NULL, NULL, NULL, 51"
explain "live stats" "$here/../sql/queries/queue_stats.sql" "false"
explain "finished totals" "$here/../sql/queries/queue_stats.sql" "true"
