#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The schema that the migrations build, in one file: sql/schema.sql. Migrations are the history,
# the snapshot is the picture; tests/db/schema.cpp checks that the two agree.
#
#   scripts/schema-snapshot.sh              regenerate sql/schema.sql: migrates a scratch database
#                                           on the private cluster with build/tools/cafmq (or $CAFMQ_CLI)
#   scripts/schema-snapshot.sh --print URL  print the snapshot of the (migrated) database at URL
set -euo pipefail

die() { echo "schema-snapshot.sh: error: $*" >&2; exit 1; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)

PGBIN=/usr/lib/postgresql/15/bin
[[ -x $PGBIN/pg_dump ]] || PGBIN=$(pg_config --bindir 2>/dev/null || echo "$PGBIN")
[[ -x $PGBIN/pg_dump ]] || die "pg_dump not found in $PGBIN; run scripts/setup.sh"

# pg_dump of schema cafmq without what varies between runs and versions of pg_dump: its comments
# (versions, object headers), SET lines, \restrict keys, and runs of empty lines; and the history's
# daily partitions, named for the day they were made (migrate makes today's and two ahead).
snapshot() {
  echo "-- The cafmq schema as the migrations leave it, as printed by"
  echo "-- scripts/schema-snapshot.sh (pg_dump, normalized). Generated: do not edit."
  echo
  "$PGBIN/pg_dump" --schema-only --schema=cafmq --no-owner --no-privileges \
    --exclude-table='cafmq.tasks_history_2*' -d "$1" \
    | awk '/^--/ || /^SET / || /^SELECT pg_catalog\.set_config/ || /^\\/ { next }
           /^[ \t]*$/ { blank = 1; next }
           { if (blank && printed) print ""; blank = 0; printed = 1; print }'
}

if [[ ${1:-} == --print ]]; then
  [[ $# -eq 2 ]] || die "usage: $0 --print URL"
  snapshot "$2"
  exit 0
fi
[[ $# -eq 0 ]] || die "usage: $0 [--print URL]"

CLI=${CAFMQ_CLI:-$ROOT/build/tools/cafmq}
[[ -x $CLI ]] || die "$CLI not found: build the cafmq-cli target first (or set CAFMQ_CLI)"
admin_url=$(bash "$ROOT/scripts/pg.sh" start)
db=cafmq_snapshot_$$
psql() { "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$admin_url" "$@"; }
psql -c "CREATE DATABASE $db"
trap 'psql -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
# The admin URL with its database replaced (both libpq URI forms).
case $admin_url in
  postgres://* | postgresql://*)
    url=$(sed -E "s#^(postgres(ql)?://[^/?]*)(/[^?]*)?#\\1/$db#" <<<"$admin_url") ;;
  *) url="$admin_url dbname=$db" ;;
esac
"$CLI" "--database-url=$url" migrate >/dev/null
snapshot "$url" >"$ROOT/sql/schema.sql"
echo "schema-snapshot.sh: wrote sql/schema.sql" >&2
