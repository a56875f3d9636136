#!/usr/bin/env bash
# Project test command: install deps, build with -Werror, start the private PostgreSQL, run ctest (extra args go to ctest).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAFMQ_WERROR=ON
cmake --build build -j2

if [[ -z ${CAFMQ_DATABASE_URL:-} ]]; then
  CAFMQ_PG_FAST=1 bash scripts/pg.sh start
fi
CAFMQ_DATABASE_URL=$(bash scripts/pg.sh url)
export CAFMQ_DATABASE_URL

exec ctest --test-dir build -j2 --output-on-failure "$@"
