# SPDX-License-Identifier: BSD-3-Clause
# Sourced by scripts that want a database of their own on the cluster of
# CAFMQ_DATABASE_URL: `fresh_database PREFIX` creates PREFIX_<pid>_<random>,
# migrates it with the cafmq tool in $cli, and sets $db and $url (the same
# URL naming it); `drop_database` (for an EXIT trap) drops it.
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
