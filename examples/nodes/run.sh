#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The three-process example: a runner node that owns the database, a worker
# node that runs the handlers, a client node that spawns, watches and
# cancels through the runner. `bash scripts/example.sh nodes` builds the
# project, starts the private PostgreSQL and calls this script with the
# build directory.
#
#   examples/nodes/run.sh BUILD_DIR   (needs CAFMQ_DATABASE_URL)
set -euo pipefail
bin=${1:?usage: examples/nodes/run.sh BUILD_DIR}/examples
: "${CAFMQ_DATABASE_URL:?set CAFMQ_DATABASE_URL}"
export CAFMQ_NODE_SECRET=${CAFMQ_NODE_SECRET:-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')}

out=$(mktemp)
runner=
worker=
cleanup() {
  [[ -n $worker ]] && kill "$worker" 2>/dev/null || true
  [[ -n $runner ]] && kill "$runner" 2>/dev/null || true
  rm -f "$out"
}
trap cleanup EXIT

"$bin/cafmq-nodes-runner" >"$out" &
runner=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/^runner: published on 127.0.0.1 port \([0-9]*\)$/\1/p' "$out")
  [[ -n $port ]] && break
  kill -0 "$runner" 2>/dev/null || { cat "$out"; echo "the runner node ended" >&2; exit 1; }
  sleep 0.1
done
[[ -n $port ]] || { echo "the runner node did not publish" >&2; exit 1; }
cat "$out"
tail -n +2 -f "$out" --pid "$runner" &

"$bin/cafmq-nodes-worker" "$port" &
worker=$!

# The client stops the runner, which lets the worker go: both end on their
# own. A failed client leaves them running (the trap ends them).
"$bin/cafmq-nodes-client" "$port" || { echo "the client failed" >&2; exit 1; }
for pid in "$runner" "$worker"; do
  for _ in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "process $pid did not end within 30 s; its threads:" >&2
    # Where it hangs, for the log (the rare node-stop hang of docs/not-done.md).
    if command -v gdb >/dev/null; then
      gdb -p "$pid" -batch -ex "thread apply all bt" 2>&1 \
        | grep -E '^(Thread|#)' | head -n 300 >&2 || true
    fi
    exit 1
  fi
done
rc=0
wait "$runner" || rc=1
runner=
wait "$worker" || rc=1
worker=
exit "$rc"
