#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# PostgreSQL restarts five times while two runners drain 6,000 tasks of
# 40 ms each in seven channels, one of them paused until the fifth restart
# (so that however fast the runners and however slow this script, the
# drain is still on): the runners reconnect and finish, both exit 0 (none
# crashed),
# and the ledger (written in each completing transaction, complete(tx) on
# the handler thread's own connection) holds every task exactly once. Runner
# "two" drops a broken connection as soon as a completion fails, with the
# transaction still in scope (a runner crashed on that, issue 30). On a
# throw-away cluster (a copy of scripts/pg.sh in a temporary directory).
#
#   restart_under_load.sh E2E CLI    (cafmq-e2e, cafmq)
set -euo pipefail
e2e=$1 cli=$2
source "$(dirname "${BASH_SOURCE[0]}")/throwaway.sh"
source "$(dirname "${BASH_SOURCE[0]}")/load.sh"
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
spawn_load "$n" 7 40
CAFMQ_DATABASE_URL=$url "$cli" pause --channel c6 >/dev/null

"$e2e" runner "$url" one 4 8 >"$tmp/runner-one.log" 2>&1 &
pids+=($!)
CAFMQ_E2E_DROP_BROKEN=1 "$e2e" runner "$url" two 4 8 >"$tmp/runner-two.log" 2>&1 &
pids+=($!)
# Mid-drain, five times: a fast shutdown of the server, a second, and back,
# once the runners have completed 200 more tasks.
restarts=0
for _ in 1 2 3 4 5; do
  runs=$(sql "SELECT count(*) FROM e2e_runs")
  ((runs + 400 < n)) || break
  wait_for_runs $((runs + 100)) 60
  pg stop >/dev/null
  sleep 1
  pg start >/dev/null
  restarts=$((restarts + 1))
done
((restarts == 5)) || fail "the drain ended after $restarts restarts"
CAFMQ_DATABASE_URL=$url "$cli" resume --channel c6 >/dev/null
wait_runners 120 "the restarts"
check_ledger "$n"
echo "restart under load: ok ($restarts restarts; $(cat "$tmp"/runner-*.log | grep -c "reconnect\|lost") reconnect or lost lines logged)"
