#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A runner started while its database is down waits for it, trying again with
# a backoff and logging each try, and runs the tasks once the database is up.
# On a throw-away cluster (a copy of scripts/pg.sh in a temporary directory).
#
#   start_without_database.sh E2E CLI    (cafmq-e2e, cafmq)
set -euo pipefail
e2e=$1 cli=$2
source "$(dirname "${BASH_SOURCE[0]}")/throwaway.sh"
pid=
on_exit+=('[[ -n $pid ]] && kill -9 "$pid" 2>/dev/null')
fail() {
  echo "FAIL: $*" >&2
  [[ -f $tmp/runner.log ]] && sed 's/^/runner: /' "$tmp/runner.log" >&2
  exit 1
}

pg start >/dev/null
url=$(pg url)
sql() { psql "$url" -v ON_ERROR_STOP=1 -qtAc "$1"; }

# Ten tasks wait in the queue; then the database goes down.
CAFMQ_DATABASE_URL=$url "$cli" migrate >/dev/null
sql "CREATE TABLE e2e_runs (id uuid, attempt int, node text, channel text,
     payload int, started timestamptz, finished timestamptz)"
sql "SELECT count(*) FROM cafmq.spawn((SELECT json_agg(json_build_object(
       'id', gen_random_uuid(), 'name', 'record', 'channel_name', '',
       'channel_args', '', 'ordered', false, 'max_attempts', 5,
       'backoff_us', 1000000, 'backoff_cap_us', 3600000000, 'json', i::text))
       FROM generate_series(1, 10) i))" >/dev/null
pg stop

# The runner starts without its database and keeps trying.
"$e2e" runner "$url" waiting 2 4 >"$tmp/runner.log" 2>&1 &
pid=$!
for _ in $(seq 200); do
  [[ $(grep -c "database not reachable at start, trying again" "$tmp/runner.log") -ge 3 ]] && break
  kill -0 "$pid" 2>/dev/null || fail "the runner gave up while its database was down"
  sleep 0.05
done
[[ $(grep -c "database not reachable at start, trying again" "$tmp/runner.log") -ge 3 ]] \
  || fail "no retries logged within 10 s"

# The database comes back: the runner connects, runs every task and exits.
pg start >/dev/null
for _ in $(seq 600); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
kill -0 "$pid" 2>/dev/null && fail "the runner did not finish within 30 s of the database's start"
wait "$pid" || fail "the runner exited with status $?"
pid=
[[ $(sql "SELECT count(*) FROM cafmq.tasks WHERE state = 'completed'") == 10 ]] \
  || fail "not every task completed: $(sql "SELECT state, count(*) FROM cafmq.tasks GROUP BY 1")"
[[ $(sql "SELECT count(DISTINCT id) FROM e2e_runs") == 10 ]] || fail "the ledger does not hold 10 tasks"
echo "runner start without database: ok ($(grep -c "trying again" "$tmp/runner.log") retries logged)"
