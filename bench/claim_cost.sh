#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The claim's throughput at two schema levels, side by side: what a
# migration costs the claim when its features are unused. Each round fills
# a fresh database per level with the same backlog (TASKS tasks over
# CHANNELS channels, through cafmq.spawn) and runs pgbench: CLIENTS
# clients, each doing CLAIMS claims of BATCH tasks (one statement, as a
# runner does), alternating the levels.
#
#   bench/claim_cost.sh [BEFORE=11] [AFTER=12]
#   env: ROUNDS=3 TASKS=150000 CHANNELS=100 BATCH=32 CLIENTS=2 CLAIMS=2000
#
# Needs the private cluster (scripts/pg.sh start); prints claims/s and
# tasks/s per level and round, then the medians and their ratio.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
before=${1:-11}
after=${2:-12}
rounds=${ROUNDS:-3}
tasks=${TASKS:-150000}
channels=${CHANNELS:-100}
batch=${BATCH:-32}
clients=${CLIENTS:-2}
claims=${CLAIMS:-2000}
url=$(bash "$root/scripts/pg.sh" url)
bindir=$(pg_config --bindir)
pgbench=$bindir/pgbench
[[ -x $pgbench ]] || pgbench=pgbench
(( tasks >= clients * claims * batch )) \
  || { echo "TASKS must cover CLIENTS * CLAIMS * BATCH" >&2; exit 2; }

db_url() { sed -E "s|^(postgresql://[^?]*/)[^?]*|\1$1|" <<<"$url"; }

# A fresh database with the migrations up to $1, filled with the backlog.
prepare() {
  local level=$1 db="claim_cost_$1"
  psql "$url" -qc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
  local u; u=$(db_url "$db")
  psql "$u" -qc "CREATE SCHEMA cafmq" >/dev/null
  for f in "$root"/sql/migrations/*.sql; do
    local n; n=$(basename "$f"); n=$((10#${n%%_*}))
    (( n <= level )) || continue
    psql "$u" -v ON_ERROR_STOP=1 -q -1 -f "$f" >/dev/null
  done
  psql "$u" -v ON_ERROR_STOP=1 -qc "
    SELECT count(*) FROM cafmq.spawn((
      SELECT json_agg(json_build_object(
               'id', gen_random_uuid(), 'name', 't',
               'channel_name', 'c' || (i % $channels), 'channel_args', '',
               'ordered', false, 'max_attempts', 5, 'backoff_us', 1000000,
               'backoff_cap_us', 3600000000, 'json', '{\"i\": ' || i || '}'))
        FROM generate_series(1, $tasks) i));" >/dev/null
  psql "$u" -v ON_ERROR_STOP=1 -qc "VACUUM ANALYZE cafmq.tasks_live" >/dev/null
  echo "$u"
}

script=$(mktemp)
trap 'rm -f "$script"' EXIT
echo "SELECT count(*) FROM cafmq.claim('bench', ARRAY['t'], NULL, NULL, $batch, interval '10 min', 0, NULL, NULL);" >"$script"

declare -A results
for ((r = 1; r <= rounds; ++r)); do
  for level in "$before" "$after"; do
    u=$(prepare "$level")
    tps=$("$pgbench" -n -f "$script" -c "$clients" -j "$clients" -t "$claims" "$u" 2>/dev/null \
            | sed -nE 's/^tps = ([0-9.]+).*/\1/p')
    results[$level]+="$tps "
    printf 'round %d  schema %2d  %8.1f claims/s  %9.0f tasks/s\n' "$r" "$level" "$tps" \
      "$(echo "$tps * $batch" | bc)"
  done
done
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mb=$(median "${results[$before]}")
ma=$(median "${results[$after]}")
printf 'median claims/s: schema %d %.1f, schema %d %.1f, ratio %.3f\n' \
  "$before" "$mb" "$after" "$ma" "$(echo "$ma / $mb" | bc -l)"
for level in "$before" "$after"; do
  psql "$url" -qc "DROP DATABASE IF EXISTS claim_cost_$level" >/dev/null
done
