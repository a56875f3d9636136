#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# PostgreSQL restarts while two runners drain 6,000 tasks: the runners
# reconnect and finish, and the ledger (written in each completing
# transaction) holds every task exactly once. On a throw-away cluster (a
# copy of scripts/pg.sh in a temporary directory).
#
#   restart_under_load.sh RUNNER CLI    (cafmq-e2e-runner, cafmq)
set -euo pipefail
runner=$1 cli=$2
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
spawn_load "$n" 7

for node in one two; do
  "$runner" "$url" "$node" 4 8 >"$tmp/runner-$node.log" 2>&1 &
  pids+=($!)
done
# Mid-drain: a fast shutdown of the server, a second, and back.
wait_for_runs 300
done_before=$(sql "SELECT count(*) FROM e2e_runs")
((done_before < n)) || fail "the drain ended before the restart"
pg stop >/dev/null
sleep 1
pg start >/dev/null
wait_runners 60 "the restart"
check_ledger "$n"
echo "restart under load: ok ($done_before of $n done at the restart; $(cat "$tmp"/runner-*.log | grep -c "reconnect\|lost") reconnect or lost lines logged)"
