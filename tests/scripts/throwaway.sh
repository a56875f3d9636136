# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the script tests: a throw-away copy of scripts/pg.sh in $tmp
# (its own cluster, port and socket directory), `pg` to run it, and
# `on_exit` hooks that run before the cluster is destroyed and $tmp removed.
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
tmp=$(mktemp -d /tmp/cafmq-pgtest.XXXXXX)
chmod 0755 "$tmp"
mkdir "$tmp/scripts"
cp "$src/scripts/pg.sh" "$tmp/scripts/"
pg() { bash "$tmp/scripts/pg.sh" "$@"; }
on_exit=()
cleanup() {
  local hook
  for hook in "${on_exit[@]}"; do eval "$hook" || true; done
  pg destroy >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
export CAFMQ_PG_FAST=1
unset CAFMQ_DATABASE_URL
