#!/usr/bin/env bash
# Build the project, start the private PostgreSQL and run the quickstart example (args go to the example).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAFMQ_WERROR=ON
cmake --build build -j2

bash scripts/pg.sh start
CAFMQ_DATABASE_URL=$(bash scripts/pg.sh url)
export CAFMQ_DATABASE_URL

exec build/examples/cafmq-quickstart "$@"
