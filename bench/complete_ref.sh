#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The same-shape pgbench reference for cafmq-bench's "drain, complete(tx) per
# task": pgbench itself completes one claimed task per transaction, with the
# runtime's own SQL, so the only difference left to the runtime is the runtime.
#
#   PGHOST=... PGPORT=... PGUSER=postgres bash bench/complete_ref.sh > ref.jsonl
#
# Steps: drops and recreates the database REF_DB, migrates it (CAFMQ_BIN
# migrate), spawns M no-op tasks (name 'noop', payload {"i": n}, default
# options) through cafmq.spawn(json) in chunks of 50,000, with ids derived
# from n = 1..M (00000000-0000-7000-8000-<n as 12 hex digits>) so that
# pgbench can compute them; claims them all with cafmq.claim (node 'ref',
# lease 1 hour, 5,000 per call), which leaves them running in attempt 1 as
# the runtime's claim does; VACUUM ANALYZE; CHECKPOINT. Then pgbench
# -n -c 4 -j 2 -T T runs, per transaction:
#   BEGIN;
#   SELECT cafmq.complete(ARRAY[<id of nextval('ref_n')>]::uuid[], ARRAY[1]);
#   COMMIT;
# (the id computed inside the statement: no extra round trip). Completed rows
# stay, as with the runtime. Afterwards the number of completed tasks must be
# at least pgbench's transactions (else some completes were no-ops: the run
# ran out of tasks or hit wrong ids) and no transaction may have failed; the
# script fails loudly otherwise. Prints one JSON line on stdout in the shape
# of shared/bench/peers/pgref.sh's, everything else on stderr. The database
# is dropped at the end.
#
# Environment: PGBIN (default: pg_config --bindir), PGHOST, PGPORT, PGUSER
# (libpq's), T (pgbench seconds, default 15), CAFMQ_BIN (the cafmq CLI,
# default build/tools/cafmq, relative to the repo root), REF_DB (default
# cafmq_ref), M (tasks; default max(50,000, 30,000 x T): more than 4 clients
# can complete in T seconds with durable commits), SCR (scratch dir for the
# pgbench script; default a temporary one).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec 3>&1 1>&2 # stdout: the JSON line only

PGBIN=${PGBIN:-$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)}
T=${T:-15}
CAFMQ_BIN=${CAFMQ_BIN:-build/tools/cafmq}
REF_DB=${REF_DB:-cafmq_ref}
M=${M:-$((30000 * T > 50000 ? 30000 * T : 50000))}
CHUNK=50000
CLAIM_BATCH=5000
SCR=${SCR:-}
tmp_scr=
if [[ -z $SCR ]]; then
  tmp_scr=$(mktemp -d)
  SCR=$tmp_scr
fi
MODE='cafmq.complete, 1 claimed task per txn (BEGIN; SELECT cafmq.complete; COMMIT)'

die() { echo "complete_ref.sh: $*" >&2; exit 1; }
[[ $REF_DB =~ ^[a-z_][a-z0-9_]*$ ]] || die "REF_DB must be a plain lower-case identifier, got '$REF_DB'"
[[ -x $CAFMQ_BIN ]] || die "the cafmq CLI is not at CAFMQ_BIN=$CAFMQ_BIN (build the target cafmq)"
PSQL=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$REF_DB")
q() { "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 -d "$REF_DB" -c "$1"; }

cleanup() {
  "$PGBIN/dropdb" --maintenance-db=postgres --if-exists --force "$REF_DB" >/dev/null 2>&1 || true
  [[ -z $tmp_scr ]] || rm -rf "$tmp_scr"
}
trap cleanup EXIT

"$PGBIN/dropdb" --maintenance-db=postgres --if-exists --force "$REF_DB"
"$PGBIN/createdb" --maintenance-db=postgres "$REF_DB"
# libpq takes host, port and user from PGHOST, PGPORT and PGUSER.
"$CAFMQ_BIN" -u "postgresql:///$REF_DB" migrate >/dev/null \
  || die "cafmq migrate failed"

# The id of task n; pgbench computes the same.
ID_OF="('00000000-0000-7000-8000-' || lpad(to_hex(%s), 12, '0'))::uuid"
# shellcheck disable=SC2059
id_of() { printf "$ID_OF" "$1"; }

t0=$(date +%s)
echo "complete_ref.sh: spawning $M tasks (cafmq.spawn(json), $CHUNK per call)"
for ((lo = 1; lo <= M; lo += CHUNK)); do
  hi=$((lo + CHUNK - 1 < M ? lo + CHUNK - 1 : M))
  # Default options, as spawn_builder writes them: 5 attempts, backoff 1 s, cap 1 h.
  cat <<SQL
SELECT count(*) FROM cafmq.spawn((
  SELECT json_agg(json_build_object(
           'id', $(id_of n), 'name', 'noop', 'channel_name', '', 'channel_args', '',
           'ordered', false, 'max_attempts', 5, 'backoff_us', 1000000,
           'backoff_cap_us', 3600000000, 'json', json_build_object('i', n)::text)
         ORDER BY n)
    FROM generate_series($lo, $hi) n)) \\g /dev/null
SQL
done | "${PSQL[@]}"

echo "complete_ref.sh: claiming them (cafmq.claim, node 'ref', lease 1 hour, $CLAIM_BATCH per call)"
"${PSQL[@]}" <<SQL
DO \$\$
DECLARE
  v_got bigint;
BEGIN
  LOOP
    SELECT count(c.id) INTO v_got
      FROM cafmq.claim('ref', ARRAY['noop'], NULL, NULL, $CLAIM_BATCH,
                       interval '1 hour', 0, NULL, NULL) c;
    COMMIT;
    EXIT WHEN v_got = 0;
  END LOOP;
END \$\$;
SQL
read -r running total < <(q "SELECT count(*) FILTER (WHERE state = 'running' AND attempt = 1), count(*) FROM cafmq.tasks" | tr '|' ' ')
[[ $running == "$M" && $total == "$M" ]] \
  || die "after the claims $running of $total tasks are running in attempt 1, expected $M"
q "CREATE SEQUENCE ref_n"
"${PSQL[@]}" -c 'VACUUM ANALYZE' -c 'CHECKPOINT'
echo "complete_ref.sh: $M tasks running in attempt 1 ($(($(date +%s) - t0)) s to set up)"

cat >"$SCR/complete_tx.sql" <<SQL
BEGIN;
SELECT cafmq.complete(ARRAY[$(id_of "nextval('ref_n')")], ARRAY[1]);
COMMIT;
SQL
echo "complete_ref.sh: pgbench -n -c 4 -j 2 -T $T, per transaction:"
cat "$SCR/complete_tx.sql"
out=$(timeout $((T + 60)) "$PGBIN/pgbench" -n -c 4 -j 2 -T "$T" -f "$SCR/complete_tx.sql" "$REF_DB" 2>&1) \
  || { echo "$out"; die "pgbench failed"; }
echo "$out"
tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out" | head -1)
lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out" | head -1)
txns=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
[[ -n $tps && -n $lat && -n $txns ]] || die "cannot read tps, latency and transactions from pgbench's output"
[[ ${failed:-0} == 0 ]] || die "$failed pgbench transactions failed"

read -r completed drawn < <(q "SELECT (SELECT count(*) FROM cafmq.tasks WHERE state = 'completed'), (SELECT last_value FROM ref_n)" | tr '|' ' ')
echo "complete_ref.sh: pgbench transactions processed $txns, tasks completed $completed, ids drawn $drawn of $M"
((drawn < M)) || die "ran out of tasks: $drawn ids drawn of $M (raise M)"
((completed >= txns)) || die "only $completed tasks completed in $txns transactions: some completes were no-ops"

printf '{"peer":"PostgreSQL (pgbench)","kind":"pgbench","mode":"%s","conc":%s,"tps":%s,"lat_ms":%s}\n' \
  "$MODE" 4 "$tps" "$lat" >&3
