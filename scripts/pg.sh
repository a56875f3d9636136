#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Private, project-local PostgreSQL 15 cluster in .pg/: scripts/pg.sh start|stop|status|url|env|destroy
set -euo pipefail

die() { echo "pg.sh: error: $*" >&2; exit 1; }
note() { echo "pg.sh: $*" >&2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
HASH=$(printf '%s' "$ROOT" | sha256sum | cut -c1-10)
PGROOT=$ROOT/.pg                  # a directory, or a symlink to $TMPTARGET
TMPTARGET=/tmp/cafmq-pg-$HASH     # used when the server user cannot reach $ROOT
SOCKDIR=/tmp/cafmq-$HASH          # short path: unix socket paths are limited to ~107 bytes

# The server must only see physical paths: the symlink itself may sit under a dir it cannot traverse.
set_paths() {
  PGDIR=$(readlink -f -- "$PGROOT" 2>/dev/null || echo "$PGROOT")
  DATA=$PGDIR/data LOG=$PGDIR/log PORTFILE=$PGDIR/port
}
set_paths

PGBIN=/usr/lib/postgresql/15/bin
[[ -x $PGBIN/initdb ]] || PGBIN=$(pg_config --bindir 2>/dev/null || echo "$PGBIN")

# As root the server runs as 'postgres'; otherwise as the invoking user.
if [[ $EUID -eq 0 ]]; then
  SRVUSER=postgres
  id -u postgres >/dev/null 2>&1 || die "running as root but there is no 'postgres' system user"
  as_srv() { (cd / && runuser -u postgres -- "$@" 9>&-); }
else
  SRVUSER=$(id -un)
  as_srv() { (cd / && "$@" 9>&-); }
fi

fast() { [[ ${CAFMQ_PG_FAST:-0} == 1 ]]; }

# Make sure the server user can reach $PGROOT; fall back to a /tmp directory behind a symlink.
ensure_pgroot() {
  if [[ -L $PGROOT && ! -e $PGROOT ]]; then        # dangling symlink, e.g. /tmp was wiped
    local target; target=$(readlink "$PGROOT")
    [[ $target == "$TMPTARGET" ]] || die "$PGROOT points to missing $target"
    install -d -m 0755 -o "$SRVUSER" "$TMPTARGET"
  elif [[ ! -e $PGROOT ]]; then
    if [[ $EUID -ne 0 ]]; then
      mkdir -m 0755 "$PGROOT"
    elif as_srv test -x "$ROOT"; then
      install -d -m 0755 -o postgres -g postgres "$PGROOT"
    else
      note "user postgres cannot traverse $ROOT; keeping the cluster in $TMPTARGET (symlinked as .pg)"
      [[ -e $TMPTARGET ]] || install -d -m 0755 -o postgres -g postgres "$TMPTARGET"
      ln -s "$TMPTARGET" "$PGROOT"
    fi
  fi
  set_paths
  check_owner
  as_srv test -x "$PGDIR" -a -w "$PGDIR" \
    || die "user $SRVUSER cannot write to $PGDIR; run 'scripts/pg.sh destroy' and start again"
}

# Refuse to manage a cluster that belongs to a different server user.
check_owner() {
  [[ -e $PGROOT ]] || return 0
  local owner; owner=$(stat -L -c %U "$PGROOT")
  [[ $owner == "$SRVUSER" ]] \
    || die "$PGROOT belongs to '$owner' but the server would run as '$SRVUSER'; use that account, or remove it"
}

ensure_sockdir() {
  if [[ ! -e $SOCKDIR ]]; then
    mkdir -m 0755 "$SOCKDIR"
    [[ $EUID -ne 0 ]] || chown postgres:postgres "$SOCKDIR"
  fi
  [[ -d $SOCKDIR && ! -L $SOCKDIR && $(stat -c %U "$SOCKDIR") == "$SRVUSER" ]] \
    || die "$SOCKDIR exists but is not a directory owned by $SRVUSER; remove it"
}

# Serialise start/stop/destroy of this cluster (as_srv closes fd 9 so the server never inherits the lock).
lock() { exec 9>>"$PGDIR/lock"; flock -w 120 9 || die "timed out waiting for $PGDIR/lock"; }

# Print the postmaster pid if OUR server is running: the pid in postmaster.pid must be a live
# 'postgres' process whose working directory is our data dir (guards against reused pids).
server_pid() {
  local pid
  pid=$(head -n1 "$DATA/postmaster.pid" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == postgres ]] || return 1
  [[ $(readlink -f "/proc/$pid/cwd" 2>/dev/null) == "$(readlink -f "$DATA")" ]] || return 1
  echo "$pid"
}

# True while any process still has our data dir as its cwd (children of a killed postmaster).
leftover_procs() {
  local d p; d=$(readlink -f "$DATA")
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/cwd" 2>/dev/null) == "$d" ]] && return 0
  done
  return 1
}

port_busy() {
  if command -v ss >/dev/null 2>&1; then
    [[ -n $(ss -Hltn "sport = :$1" 2>/dev/null) ]]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

# Deterministic first candidate from the repo path hash, then the next free one in 25432..26111:
# below Linux's ephemeral range (32768..60999), where outgoing connections could take the port
# between our check and the server's bind ("Address already in use").
pick_port() {
  local first=$((16#${HASH:0:8} % 680)) i p
  for ((i = 0; i < 680; i++)); do
    p=$((25432 + (first + i) % 680))
    port_busy "$p" || { echo "$p"; return 0; }
  done
  die "no free TCP port in 25432..26111"
}

read_port() {
  local port; port=$(cat "$PORTFILE" 2>/dev/null) || return 1
  [[ $port =~ ^[0-9]+$ ]] || return 1
  echo "$port"
}

psql_admin() {
  "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCKDIR" -p "$PORT" -U postgres -d postgres "$@"
}

cmd_url() {
  if [[ -n ${CAFMQ_DATABASE_URL:-} ]]; then echo "$CAFMQ_DATABASE_URL"; return 0; fi
  local port; port=$(read_port) || die "no cluster yet ($PORTFILE missing); run 'scripts/pg.sh start' first"
  echo "postgresql:///cafmq?host=$SOCKDIR&port=$port&user=postgres"
}

cmd_env() {
  local url; url=$(cmd_url)
  echo "export CAFMQ_DATABASE_URL='${url//\'/\'\\\'\'}'"
}

# True when CAFMQ_DATABASE_URL names a database other than this private cluster.
foreign_url() {
  [[ -n ${CAFMQ_DATABASE_URL:-} && $CAFMQ_DATABASE_URL != *"host=$SOCKDIR&"* ]]
}

cmd_start() {
  # A URL of this cluster (from 'url' or 'env') does not stop us starting it: 'stop; start'
  # brings it back.
  if foreign_url; then echo "$CAFMQ_DATABASE_URL"; return 0; fi
  [[ -x $PGBIN/initdb && -x $PGBIN/pg_ctl ]] || die "PostgreSQL 15 server binaries not found in $PGBIN; run scripts/setup.sh"
  ensure_pgroot
  lock
  ensure_sockdir

  if ! server_pid >/dev/null; then
    if [[ -e $DATA/postmaster.pid ]]; then
      note "removing stale $DATA/postmaster.pid (its pid is not our running postmaster)"
      rm -f "$DATA/postmaster.pid"
      local i
      for ((i = 0; i < 100; i++)); do leftover_procs || break; sleep 0.1; done
    fi

    if [[ ! -f $DATA/PG_VERSION ]]; then
      [[ ! -e $DATA ]] || { note "removing incomplete data directory $DATA"; rm -rf "$DATA"; }
      note "initialising cluster in $DATA"
      local initdb_args=(-D "$DATA" -A trust -U postgres -E UTF8 --locale=C.UTF-8)
      fast && initdb_args+=(--no-sync)
      as_srv "$PGBIN/initdb" "${initdb_args[@]}" >"$PGDIR/initdb.log" 2>&1 \
        || { cat "$PGDIR/initdb.log" >&2; die "initdb failed (see $PGDIR/initdb.log)"; }
    fi

    if ! PORT=$(read_port); then
      PORT=$(pick_port)
    elif ((PORT >= 32768)); then
      note "port $PORT is in the ephemeral range; choosing a new one"
      PORT=$(pick_port)
    elif port_busy "$PORT"; then
      note "port $PORT is taken by another process; choosing a new one"
      PORT=$(pick_port)
    fi
    echo "$PORT" >"$PORTFILE"
    # Our server is not running, so any socket/lock file in our private socket dir is stale
    # (a killed postmaster leaves them; postgres refuses to start if that pid looks alive).
    rm -f -- "$SOCKDIR"/.s.PGSQL.*

    local opts="-p $PORT -k $SOCKDIR -c listen_addresses=127.0.0.1 -c max_connections=300"
    fast && opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    if ! as_srv "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -w -o "$opts" start >&2; then
      tail -n 20 "$LOG" >&2 || true
      die "could not start PostgreSQL (log: $LOG)"
    fi
  fi

  PORT=$(read_port) || die "$PORTFILE missing although the server is running"
  if [[ $(psql_admin -tAc "select 1 from pg_database where datname = 'cafmq'") != 1 ]]; then
    psql_admin -c 'create database cafmq' || die "could not create database cafmq"
  fi
  cmd_url
}

cmd_stop() {
  foreign_url && note "CAFMQ_DATABASE_URL names another database; stopping only the private cluster"
  check_owner
  [[ -e $PGROOT ]] || { note "not running (no cluster)"; return 0; }
  lock
  if server_pid >/dev/null; then
    as_srv "$PGBIN/pg_ctl" -D "$DATA" -m fast -w stop >&2
  else
    note "not running"
  fi
}

cmd_status() {
  check_owner
  local port pid data=$DATA
  port=$(read_port || echo none)
  if pid=$(server_pid); then
    echo "running (pid $pid) port=$port data=$data"
  else
    echo "stopped port=$port data=$data"
    exit 3
  fi
}

cmd_destroy() {
  cmd_stop
  if [[ -L $PGROOT ]]; then
    local target; target=$(readlink "$PGROOT")
    if [[ $target == "$TMPTARGET" ]]; then
      rm -rf -- "$TMPTARGET"
      rm -f -- "$PGROOT"
    else
      note "keeping your symlink $PGROOT -> $target; removing only the cluster files in it"
      rm -rf -- "$PGROOT/data" "$PGROOT/log" "$PGROOT/port" "$PGROOT/initdb.log" "$PGROOT/lock"
    fi
  else
    rm -rf -- "$PGROOT"
  fi
  rm -rf -- "$SOCKDIR"
  note "cluster destroyed"
}

case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  url) cmd_url ;;
  env) cmd_env ;;
  destroy) cmd_destroy ;;
  *) echo "usage: $0 start|stop|status|url|env|destroy" >&2; exit 2 ;;
esac
