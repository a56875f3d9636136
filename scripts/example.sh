#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install what building needs, build the libraries and one example (only
# those: no test suites, no benchmark), start the private PostgreSQL and run
# the example:
#   scripts/example.sh NAME [ARGS...]   (NAME: quickstart, ordered, checkpoint,
#                                        two_phase, actor_handler, workflow,
#                                        nodes)
# build/ is configured by the `dev` preset (CMakePresets.json), as
# scripts/test.sh configures it: the test command reuses what this built.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ $# -lt 1 ]]; then
  echo "usage: scripts/example.sh NAME [ARGS...]" >&2
  exit 2
fi
name=$1
shift
case $name in
  quickstart | ordered | checkpoint | two_phase | actor_handler | workflow)
    targets=("cafmq-$name") ;;
  nodes) targets=(cafmq-nodes-runner cafmq-nodes-worker cafmq-nodes-client) ;;
  *) echo "scripts/example.sh: unknown example '$name'" >&2; exit 2 ;;
esac

bash scripts/setup.sh build
cmake --preset dev >/dev/null
cmake --build build -j2 --target "${targets[@]}"

if [[ -z ${CAFMQ_DATABASE_URL:-} ]]; then
  bash scripts/pg.sh start >/dev/null
fi
CAFMQ_DATABASE_URL=$(bash scripts/pg.sh url)
export CAFMQ_DATABASE_URL

if [[ $name == nodes ]]; then
  exec bash examples/nodes/run.sh build "$@"
fi
exec "build/examples/cafmq-$name" "$@"
