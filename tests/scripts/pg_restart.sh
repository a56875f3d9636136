#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/pg.sh on a throw-away copy of the project (its own cluster, port and socket
# directory): with CAFMQ_DATABASE_URL set to the cluster's own URL, as `pg.sh env` prints
# it, `stop; start` brings the database back; a URL of another database leaves it alone.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/throwaway.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

pg start >/dev/null
CAFMQ_DATABASE_URL=$(pg url)
export CAFMQ_DATABASE_URL
psql "$CAFMQ_DATABASE_URL" -tAc 'select 1' | grep -qx 1 || fail "cluster not up after start"

pg stop
pg status >/dev/null && fail "cluster still running after stop"
[[ $(pg start) == "$CAFMQ_DATABASE_URL" ]] || fail "start printed another URL"
pg status >/dev/null || fail "stop; start left the cluster down"
psql "$CAFMQ_DATABASE_URL" -tAc 'select 1' | grep -qx 1 || fail "database not reachable after stop; start"

pg stop
[[ $(CAFMQ_DATABASE_URL=postgresql://elsewhere/x pg start) == postgresql://elsewhere/x ]] \
  || fail "start with another database's URL did not print it"
pg status >/dev/null && fail "start with another database's URL started the private cluster"
echo "pg.sh stop/start: ok"
