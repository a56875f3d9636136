#!/usr/bin/env bash
# PostgreSQL restarts while two runners drain 6,000 tasks: the runners
# reconnect and finish, and the ledger (written in each completing
# transaction) holds every task exactly once. On a throw-away cluster (a
# copy of scripts/pg.sh in a temporary directory).
#
#   restart_under_load.sh RUNNER CLI    (cafmq-e2e-runner, cafmq)
set -euo pipefail
runner=$1 cli=$2
source "$(dirname "${BASH_SOURCE[0]}")/throwaway.sh"
pids=()
on_exit+=('for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done')
fail() {
  echo "FAIL: $*" >&2
  for f in "$tmp"/runner-*.log; do [[ -f $f ]] && sed "s|^|$(basename "$f"): |" "$f" >&2; done
  exit 1
}

pg start >/dev/null
url=$(pg url)
sql() { psql "$url" -v ON_ERROR_STOP=1 -qtAc "$1"; }
n=6000
CAFMQ_DATABASE_URL=$url "$cli" migrate >/dev/null
sql "CREATE TABLE e2e_runs (id uuid, attempt int, node text, channel text,
     payload int, started timestamptz, finished timestamptz)"
sql "SELECT count(*) FROM cafmq.spawn((SELECT json_agg(json_build_object(
       'id', gen_random_uuid(), 'name', 'record', 'channel_name', 'c' || (i % 7),
       'channel_args', '', 'ordered', false, 'max_attempts', 25,
       'backoff_us', 100000, 'backoff_cap_us', 1000000, 'json', i::text))
       FROM generate_series(1, $n) i))" >/dev/null

for node in one two; do
  "$runner" "$url" "$node" 4 8 >"$tmp/runner-$node.log" 2>&1 &
  pids+=($!)
done
# Mid-drain: a fast shutdown of the server, a second, and back.
for _ in $(seq 600); do
  [[ $(sql "SELECT count(*) FROM e2e_runs") -ge 300 ]] && break
  sleep 0.02
done
done_before=$(sql "SELECT count(*) FROM e2e_runs")
((done_before < n)) || fail "the drain ended before the restart"
pg stop >/dev/null
sleep 1
pg start >/dev/null
for p in "${pids[@]}"; do
  for _ in $(seq 1200); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$p" 2>/dev/null && fail "a runner did not finish within 60 s of the restart"
  wait "$p" || fail "a runner exited with status $?"
done
pids=()
[[ $(sql "SELECT count(*) FROM cafmq.tasks WHERE state = 'completed'") == "$n" ]] \
  || fail "not every task completed: $(sql "SELECT state, count(*) FROM cafmq.tasks GROUP BY 1")"
[[ $(sql "SELECT count(*) FROM e2e_runs") == "$n" ]] || fail "the ledger holds $(sql "SELECT count(*) FROM e2e_runs") rows, want $n"
[[ $(sql "SELECT count(DISTINCT id) FROM e2e_runs") == "$n" ]] || fail "a task completed twice"
echo "restart under load: ok ($done_before of $n done at the restart; $(cat "$tmp"/runner-*.log | grep -c "reconnect\|lost") reconnect or lost lines logged)"
