#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The suites that wait on processes, timers and the database (labels e2e,
# fault and scripts), run RUNS times in a row (default 10) in build/, two
# at once as scripts/test.sh runs them, while
# `stress` keeps both cores busy: a check that no test depends on how fast
# the machine is. Prints one line per run and exits non-zero if any failed;
# each run's output is kept in build/stress-N.log.
#   usage: scripts/stress.sh [RUNS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-10}
command -v stress >/dev/null || { echo "stress.sh: apt-get install stress" >&2; exit 2; }
[[ -d build ]] || { echo "stress.sh: build/ is missing: run scripts/test.sh first" >&2; exit 2; }
if [[ -z ${CAFMQ_DATABASE_URL:-} ]]; then
  CAFMQ_PG_FAST=1 bash scripts/pg.sh start >/dev/null
  CAFMQ_DATABASE_URL=$(bash scripts/pg.sh url)
fi
export CAFMQ_DATABASE_URL
stress --cpu "$(nproc)" >/dev/null 2>&1 &
load=$!
trap 'kill "$load" 2>/dev/null; pkill -P "$load" 2>/dev/null || true' EXIT
failed=0
for i in $(seq "$runs"); do
  t0=$SECONDS
  if ctest --test-dir build -L 'e2e|fault|scripts' -j2 --output-on-failure \
       >"build/stress-$i.log" 2>&1; then
    result=passed
  else
    result=FAILED
    failed=$((failed + 1))
  fi
  echo "stress.sh: run $i: $result in $((SECONDS - t0)) s"
  [[ $result == passed ]] || grep -E '\*\*\*Failed|Failed  ' "build/stress-$i.log" || true
done
echo "stress.sh: $((runs - failed)) of $runs runs passed"
((failed == 0))
