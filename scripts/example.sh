#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Build the project, start the private PostgreSQL and run one example:
#   scripts/example.sh NAME [ARGS...]   (NAME: quickstart, ordered, checkpoint,
#                                        two_phase, actor_handler, nodes)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ $# -lt 1 ]]; then
  echo "usage: scripts/example.sh NAME [ARGS...]" >&2
  exit 2
fi
name=$1
shift

bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAFMQ_WERROR=ON
cmake --build build -j2

if [[ -z ${CAFMQ_DATABASE_URL:-} ]]; then
  bash scripts/pg.sh start >/dev/null
fi
CAFMQ_DATABASE_URL=$(bash scripts/pg.sh url)
export CAFMQ_DATABASE_URL

if [[ $name == nodes ]]; then
  exec bash examples/nodes/run.sh build "$@"
fi
exec "build/examples/cafmq-$name" "$@"
