#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Measures (asserts nothing) the dashboard's page load with N finished tasks
# (default 1,000,000) in cafmq.tasks: the HTTP time of the page and of each
# API call it makes (median of 5 with curl), and in headless Chromium the
# page's own timings until the first rows show. Also prints EXPLAIN ANALYZE
# of the finished totals' query. In a fresh database of CAFMQ_DATABASE_URL.
#
#   bench/dashboard_load.sh CLI [N]     (build/tools/cafmq)
set -euo pipefail
cli=$1 n=${2:-1000000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
source "$here/../tests/scripts/fresh_database.sh"
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

# N finished tasks over the last ~28 hours (one every 100 ms), ids
# time-ordered like uuid::time_ordered (48 bits of Unix milliseconds,
# version 7, variant 8): 90% completed, 7% failed, 3% cancelled, over 4
# names and 3 channels; plus 20 pending and 3 running for the live counts.
start=$(date +%s.%N)
sql "INSERT INTO cafmq.tasks (id, seq, name, channel_name, channel_args, state,
       ordered, attempt, max_attempts, run_at, backoff, backoff_cap,
       last_error, created_at, started_at, finished_at)
     SELECT (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0')
             || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid,
            nextval('cafmq.task_seq'),
            (ARRAY['send_email', 'resize_image', 'charge_card', 'sync_crm'])[1 + i % 4],
            (ARRAY['', 'mail', 'billing'])[1 + i % 3], '',
            s::cafmq.task_state, false, 1, 5, t, '1 s', '1 h',
            CASE WHEN s = 'failed' THEN 'timeout after 30 s' END,
            t, t + interval '5 ms', t + interval '20 ms'
       FROM generate_series(1, $n) i,
            LATERAL (SELECT now() - interval '28 hours' + i * interval '100 ms' AS t,
                            md5(i::text) AS h,
                            CASE WHEN i % 100 < 90 THEN 'completed'
                                 WHEN i % 100 < 97 THEN 'failed'
                                 ELSE 'cancelled' END AS s) x"
sql "SELECT count(*) FROM (SELECT cafmq.spawn('send_email', jsonb_build_object('to', 'user' || i || '@example.com'),
                                              run_at => now() + interval '1 hour')
                           FROM generate_series(1, 20) i) x" >/dev/null
sql "VACUUM ANALYZE cafmq.tasks"
# Plans of statements slower than 100 ms go to the dashboard's stderr (its
# connections print notices there) with their EXPLAIN ANALYZE.
sql "ALTER DATABASE $db SET session_preload_libraries = 'auto_explain'"
sql "ALTER DATABASE $db SET auto_explain.log_min_duration = '100ms'"
sql "ALTER DATABASE $db SET auto_explain.log_analyze = on"
sql "ALTER DATABASE $db SET client_min_messages = log"
printf 'inserted %s finished tasks in %.1f s; table %s, indexes %s\n' "$n" \
  "$(awk "BEGIN { print $(date +%s.%N) - $start }")" \
  "$(sql "SELECT pg_size_pretty(pg_table_size('cafmq.tasks'))")" \
  "$(sql "SELECT pg_size_pretty(pg_indexes_size('cafmq.tasks'))")"

token=bench
CAFMQ_DATABASE_URL=$url "$cli" dashboard --listen 127.0.0.1:0 --token $token \
  >"$tmp/dashboard.log" 2>&1 &
pid=$!
base=
for _ in $(seq 200); do
  base=$(sed -n 's|.*serving url=\(http://[^ ]*\)/ .*|\1|p' "$tmp/dashboard.log")
  [[ -n $base ]] && break
  sleep 0.05
done
[[ -n $base ]] || { cat "$tmp/dashboard.log"; exit 1; }

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
            "/api/tasks?limit=50&state=pending" "/api/tasks?limit=50&older_than=1d" \
            "/api/tasks/$deep" "/api/stats?finished=1"; do
  echo "| \`${path//$deep/MIDDLE}\` | $(median "$base$path") |"
done

echo
python3 "$here/dashboard_load.py" "$base" "$token"

echo
echo "Statements slower than 100 ms (auto_explain, EXPLAIN ANALYZE):"
grep -v '^cafmq dashboard' "$tmp/dashboard.log" || echo "(none)"
