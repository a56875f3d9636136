#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Reproduces the benchmark table: builds cafmq-bench, restarts the private
# PostgreSQL with default durability (fsync and synchronous_commit on), and
# runs every part (median of 3). Arguments go to cafmq-bench, e.g.
#   bash bench/run.sh --parts=drain,latency --reps=1
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAFMQ_WERROR=ON >/dev/null
cmake --build build -j2 --target cafmq-bench
if [[ -z ${CAFMQ_DATABASE_URL:-} ]]; then
  # A cluster started by the tests runs without fsync: restart it with the
  # PostgreSQL defaults so the numbers compare with the peers'.
  bash scripts/pg.sh stop >/dev/null
  bash scripts/pg.sh start >/dev/null
  CAFMQ_DATABASE_URL=$(bash scripts/pg.sh url)
  export CAFMQ_DATABASE_URL
fi
exec build/bench/cafmq-bench "$@"
