# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the dashboard's scripts (tests/scripts/dashboard.sh,
# bench/dashboard_load.sh, scripts/dashboard_screenshot.sh), which set $cli
# to the cafmq tool:
#   fresh_database PREFIX  creates database PREFIX_<pid>_<random> on the
#                          cluster of CAFMQ_DATABASE_URL and migrates it;
#                          sets $db and $url (the same URL naming it)
#   drop_database          drops it (for an EXIT trap)
#   serve_dashboard LOG ARGS...
#                          starts `cafmq dashboard --listen 127.0.0.1:0 ARGS`
#                          on $url in the background, its output in LOG;
#                          sets $dashboard_pid, and $base to its address once
#                          it serves; returns 1 if it exits or does not serve
#                          within 10 s
: "${CAFMQ_DATABASE_URL:?set CAFMQ_DATABASE_URL}"
db= url=
fresh_database() {
  db=$1_$$_$RANDOM
  if [[ $CAFMQ_DATABASE_URL =~ ^(postgres(ql)?://[^/?]*)(/[^?]*)?(\?.*)?$ ]]; then
    url="${BASH_REMATCH[1]}/$db${BASH_REMATCH[4]}"
  else
    url="$CAFMQ_DATABASE_URL dbname=$db"
  fi
  psql "$CAFMQ_DATABASE_URL" -qc "CREATE DATABASE $db" >/dev/null
  CAFMQ_DATABASE_URL=$url "$cli" migrate >/dev/null
}
drop_database() {
  [[ -z $db ]] || psql "$CAFMQ_DATABASE_URL" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" \
    >/dev/null 2>&1 || true
}
serve_dashboard() {
  local log=$1; shift
  CAFMQ_DATABASE_URL=$url "$cli" dashboard --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
  dashboard_pid=$!
  base=
  for _ in $(seq 200); do
    base=$(sed -n 's|.*serving url=\(http://[^ ]*\)/ .*|\1|p' "$log")
    [[ -n $base ]] && return 0
    kill -0 "$dashboard_pid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
