#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Where the drain's database time goes: restarts the private cluster with
# pg_stat_statements loaded, runs `cafmq-bench --parts=drain --n=N` once,
# and prints each statement the drain ran (top level, or run inside a
# function: track = all) with its calls, rows, and server
# time per task (total / N), largest first, then takes pg_stat_statements
# out again (ALTER SYSTEM RESET and a restart). The statements that spawn
# the backlog before the drain's clock (COPY, the spawn's insert) and the
# harness's VACUUM and CHECKPOINT are listed too: leave them out.
#
#   bash bench/drain_profile.sh [N=20000]
#
# The time is each statement's execution in the server (planning and the
# commit's flush are not in it): compare the parts, not the sum with the
# wall clock.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n=${1:-20000}
bench=build/bench/cafmq-bench
[[ -x $bench ]] || { echo "drain_profile.sh: build $bench first" >&2; exit 1; }
url=$(bash scripts/pg.sh start)
restart() {
  bash scripts/pg.sh stop >/dev/null
  bash scripts/pg.sh start >/dev/null
}
psql "$url" -qc "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" >/dev/null
restart
psql "$url" -qc "ALTER SYSTEM SET pg_stat_statements.track = 'all'" \
  -c "SELECT pg_reload_conf()" >/dev/null
undo() {
  psql "$url" -qc "ALTER SYSTEM RESET shared_preload_libraries" \
    -c "ALTER SYSTEM RESET pg_stat_statements.track" >/dev/null 2>&1 || true
  restart
}
trap undo EXIT
psql "$url" -qc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
psql "$url" -qc "SELECT pg_stat_statements_reset()" >/dev/null
CAFMQ_DATABASE_URL=$url "$bench" --reps=1 --parts=drain --n="$n" | grep -E "^drain"
psql "$url" -P pager=off -c "
  SELECT toplevel AS top, calls, rows, round((total_exec_time / $n * 1000)::numeric, 1) AS us_per_task,
         round(mean_exec_time::numeric, 3) AS ms_per_call,
         regexp_replace(left(query, 90), '\s+', ' ', 'g') AS statement
    FROM pg_stat_statements
   WHERE dbid = (SELECT oid FROM pg_database WHERE datname LIKE 'cafmq_bench_%' ORDER BY oid DESC LIMIT 1)
     AND total_exec_time > 0
   ORDER BY total_exec_time DESC LIMIT 20"
