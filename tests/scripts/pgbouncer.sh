#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A runner behind PgBouncer in transaction mode, where LISTEN holds no server
# connection and notifications are dropped. With listen-url pointing at
# PostgreSQL directly, notifications wake the runner (it polls only hourly,
# and every pickup waits for a task at most 30 s); without it the runner
# logs one clear warning and claims every fallback-poll-interval. The
# pickup times are printed, not judged: speed is the benchmarks' business.
# On a throw-away cluster (a copy of scripts/pg.sh in a temporary directory)
# with a private PgBouncer on a port below the ephemeral range.
#
#   pgbouncer.sh E2E    (cafmq-e2e)
set -euo pipefail
e2e=$1
pgb=$(PATH=$PATH:/usr/sbin command -v pgbouncer) \
  || { echo "FAIL: pgbouncer is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/throwaway.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

pg start >/dev/null
direct=$(pg url)
pgport=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$direct")
[[ -n $pgport ]] || fail "no port in $direct"

bdir=$tmp/bouncer
mkdir "$bdir"
echo '"postgres" ""' >"$bdir/userlist.txt"
chown -R postgres: "$bdir"
on_exit+=('[[ -s $bdir/pgbouncer.pid ]] && kill -INT "$(cat "$bdir/pgbouncer.pid")" 2>/dev/null; sleep 0.2')
started=
for _ in 1 2 3 4 5; do
  bport=$((20000 + RANDOM % 12000))
  cat >"$bdir/pgbouncer.ini" <<INI
[databases]
cafmq = host=127.0.0.1 port=$pgport dbname=cafmq
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
auth_type = trust
auth_file = $bdir/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = 10
max_client_conn = 200
logfile = $bdir/pgbouncer.log
pidfile = $bdir/pgbouncer.pid
INI
  chown postgres: "$bdir/pgbouncer.ini"
  runuser -u postgres -- "$pgb" -d "$bdir/pgbouncer.ini" || true
  for _ in $(seq 50); do
    [[ -s $bdir/pgbouncer.pid ]] && psql "host=127.0.0.1 port=$bport dbname=cafmq user=postgres" \
      -qtAc 'SELECT 1' >/dev/null 2>&1 && { started=1; break; }
    sleep 0.1
  done
  [[ -n $started ]] && break
  [[ -s $bdir/pgbouncer.pid ]] && kill -INT "$(cat "$bdir/pgbouncer.pid")" 2>/dev/null || true
  rm -f "$bdir/pgbouncer.pid"
done
[[ -n $started ]] || { cat "$bdir/pgbouncer.log" >&2 || true; fail "pgbouncer did not start"; }
pooled="postgresql://postgres@127.0.0.1:$bport/cafmq"
psql "$pooled" -qtAc 'SHOW pool_mode' >/dev/null 2>&1 || true

# Work through the pooler, LISTEN directly: fast pickup, no warning.
"$e2e" pickup "$direct" "$pooled" 20 "$direct" >"$tmp/with.log" 2>&1 \
  || { cat "$tmp/with.log" >&2; fail "the runner with listen-url failed"; }
grep -q "notifications do not reach" "$tmp/with.log" \
  && { cat "$tmp/with.log" >&2; fail "warning logged although listen-url is direct"; }
# Default settings: PgBouncer refuses the startup parameter `options`; the
# runner connects without it and says so once.
[[ $(grep -c "refused the startup parameter \`options\`" "$tmp/with.log") == 1 ]] \
  || { cat "$tmp/with.log" >&2; fail "not exactly one warning about the refused options"; }
with=$(grep '^pickup' "$tmp/with.log")

# Everything through the pooler: the probe fails, one warning, polling.
"$e2e" pickup "$direct" "$pooled" 20 >"$tmp/without.log" 2>&1 \
  || { cat "$tmp/without.log" >&2; fail "the runner without listen-url failed"; }
[[ $(grep -c "notifications do not reach" "$tmp/without.log") == 1 ]] \
  || { cat "$tmp/without.log" >&2; fail "not exactly one warning without listen-url"; }
[[ $(grep -c "refused the startup parameter \`options\`" "$tmp/without.log") == 1 ]] \
  || { cat "$tmp/without.log" >&2; fail "not exactly one warning about the refused options"; }
without=$(grep '^pickup' "$tmp/without.log")
echo "pgbouncer (transaction mode): with listen-url $with; without $without"
