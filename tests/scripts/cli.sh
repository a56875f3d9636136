#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The `cafmq` command line as an operator uses it, on a fresh database of the
# private cluster (CAFMQ_DATABASE_URL): help and usage errors, an unmigrated
# database, migrate and its steps, list / stats / retry / cancel / prune /
# compact / top / status / watch / version in text and JSON, exit codes, the config
# file's [cafmq] group.
#
#   cli.sh CLI      (the cafmq binary)
set -euo pipefail
cli=$1
: "${CAFMQ_DATABASE_URL:?set CAFMQ_DATABASE_URL (scripts/pg.sh url)}"
db="cafmq_cli_$$"
admin=$CAFMQ_DATABASE_URL
url=$(python3 -c 'import re,sys; print(re.sub(r"^(postgresql://[^/?]*/)[^?]*", r"\g<1>'"$db"'", sys.argv[1]))' "$admin")
tmp=$(mktemp -d)
cleanup() {
  psql "$admin" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
psql "$admin" -qc "CREATE DATABASE $db" >/dev/null
export CAFMQ_DATABASE_URL=$url
# No config file of the build tree's: only what the test sets.
export CAFMQ_CONFIG=$tmp/none.ini

fail() { echo "FAIL: $*" >&2; exit 1; }
sql() { psql "$url" -v ON_ERROR_STOP=1 -qtAc "$1"; }
# run EXPECTED_RC ARGS...: runs the CLI, keeps stdout/stderr in $out/$err.
run() {
  local want=$1; shift
  local rc=0
  "$cli" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  out=$(cat "$tmp/out") err=$(cat "$tmp/err")
  [[ $rc == "$want" ]] || fail "cafmq $* exited $rc, expected $want; stdout: $out; stderr: $err"
}
has() { grep -qF -- "$2" <<<"$1" || fail "expected '$2' in: $1"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)" <<<"$out"; }

# -- help and usage ---------------------------------------------------------
run 0 --help
for cmd in migrate version status watch list stats retry cancel prune compact pause resume schedule limit workflow top dashboard metrics node; do
  has "$out" "  $cmd "
done
has "$out" "Exit codes:"
for cmd in migrate version status watch list stats retry cancel prune compact pause resume schedule limit workflow top dashboard metrics; do
  run 0 "$cmd" --help
  has "$out" "Usage: cafmq $cmd"
done
run 0 --version
has "$out" "cafmq 0."
run 2 bogus
has "$err" "unknown command: bogus"
run 2
has "$err" "A subcommand is required"
run 2 status
has "$err" "id is required"
run 2 status not-an-id
has "$err" "not a task id: not-an-id"
run 2 list --state sleeping
has "$err" "not a task state: sleeping"
run 2 list --older-than soon
has "$err" "--older-than is not a duration: soon"
run 2 cancel
has "$err" "cancel takes task ids or a filter"
run 2 -c "$tmp/missing.ini" list
has "$err" "no config file $tmp/missing.ini"
(unset CAFMQ_DATABASE_URL; run 2 list; has "$err" "no database")

# -- an unmigrated database -------------------------------------------------
run 5 list
has "$err" "run \`cafmq migrate\`"
run 5 stats
run 0 migrate --status
has "$out" "pending  operations"
run 0 migrate
has "$out" "applying 1 (schema)"
has "$out" "applying 10 (operations)"
run 0 migrate
has "$out" "up to date"
run 0 --json migrate --status
[[ $(json 'all(x["applied"] for x in d)') == True ]] || fail "migrate --status --json: $out"
run 0 version --json
[[ $(json 'd["database_schema"] == d["binary_schema"]') == True ]] || fail "version: $out"

# -- tasks: list, stats, status ---------------------------------------------
spawn() { sql "SELECT cafmq.spawn($1)"; }
# finish ID STATE SET: task ID ends in STATE by hand, then SET changes it.
finish() {
  psql "$url" -v ON_ERROR_STOP=1 -qtA -v id="$1" -v state="$2" -v set="$3" \
    -f "$(dirname "${BASH_SOURCE[0]}")/finish_by_hand.sql" >/dev/null
}
a=$(spawn "'send_email', '{\"to\": \"ann\"}', channel_name => 'mail', run_at => now() + interval '1 hour'")
b=$(spawn "'send_email', '{\"to\": \"bob\"}', channel_name => 'mail'")
c=$(spawn "'resize', '{}', channel_name => 'images'")
d=$(spawn "'resize', '{}', channel_name => 'images'")
# c failed for good, d completed (as a runner would leave them).
finish "$c" failed "attempt = 5, last_error = 'disk full'"
finish "$d" completed "attempt = 1"

run 0 list
has "$out" "$a"
has "$out" "disk full"
run 0 list --json
[[ $(json 'len(d["tasks"])') == 4 ]] || fail "list --json: $out"
[[ $(json 'd["tasks"][0]["id"]') == "$d" ]] || fail "newest first: $out"
run 0 list --state failed --json
[[ $(json '[t["id"] for t in d["tasks"]]') == "['$c']" ]] || fail "--state: $out"
run 0 list --channel mail --name send_email --json
[[ $(json 'len(d["tasks"])') == 2 ]] || fail "--channel --name: $out"
run 0 list --older-than 1h
has "$out" "no tasks"
run 0 list --limit 3 --json
next=$(json 'd["next"]')
run 0 list --limit 3 --after "$next" --json
[[ $(json '[t["id"] for t in d["tasks"]]') == "['$a']" ]] || fail "paging: $out"
[[ $(json 'd["next"]') == None ]] || fail "last page: $out"
run 0 list --limit 3
has "$out" "more: add --after="

run 0 stats --json
[[ $(json '[(x["channel_name"], x["state"], x["tasks"]) for x in d if x["state"] == "pending"]') == "[('mail', 'pending', 2)]" ]] \
  || fail "stats pending: $out"
[[ $(json '[x["ready"] for x in d if x["state"] == "pending"]') == "[1]" ]] || fail "stats ready: $out"
[[ $(json '[x["last_minute"] for x in d if x["state"] == "failed"]') == "[1]" ]] || fail "stats throughput: $out"
run 0 stats
has "$out" "CHANNEL"
has "$out" "images"
run 0 stats --live --json

run 0 status "$c"
has "$out" "state=failed"
has "$out" 'last_error="disk full"'
run 0 status "$a" --json
[[ $(json 'd["payload"]') == '{"to": "ann"}' ]] || fail "status --json payload: $out"
run 6 status 00000000-0000-7000-8000-000000000000
has "$err" "no task with id"
run 0 watch "$d"
has "$out" "state=completed"

# -- retry and cancel -------------------------------------------------------
run 0 retry "$c"
has "$out" "retried 1"
[[ $(sql "SELECT state || ' ' || attempt || '/' || max_attempts FROM cafmq.tasks WHERE id = '$c'") == "pending 5/10" ]] \
  || fail "retry did not give a fresh budget"
run 1 retry "$d"
has "$out" "not retried: completed"
run 6 retry 00000000-0000-7000-8000-000000000000
run 0 cancel "$b" --json
[[ $(json 'd[0]["cancel"]') == cancelled ]] || fail "cancel --json: $out"
run 0 retry --state cancelled --json
[[ $(json 'd["retried"]') == "['$b']" ]] || fail "retry by filter: $out"
run 0 cancel --channel mail
has "$out" "cancelled 2"
[[ $(sql "SELECT count(*) FROM cafmq.tasks WHERE channel_name = 'mail' AND state = 'cancelled'") == 2 ]] \
  || fail "cancel by filter"
run 0 cancel --all --json
[[ $(json 'd["cancelled"]') == 1 ]] || fail "cancel --all: $out"
run 1 cancel "$d"

# -- pause and resume (cluster-wide: in the database) ----------------------
run 0 pause
has "$out" "nothing is paused"
run 0 pause --channel mail
has "$out" 'channel "mail" paused'
run 0 pause --channel mail
has "$out" "was paused already"
run 0 pause --task resize --json
[[ $(json 'd["changed"]') == True ]] || fail "pause --task: $out"
run 0 pause --json
[[ $(json 'sorted((x["kind"], x["name"]) for x in d)') == "[('channel', 'mail'), ('task', 'resize')]" ]] \
  || fail "pause list: $out"
[[ $(sql "SELECT count(*) FROM cafmq.pauses") == 2 ]] || fail "pauses not persisted"
run 2 pause --channel mail --task resize
run 2 resume
run 0 resume --channel mail
has "$out" 'channel "mail" resumed'
run 0 resume --task resize
run 0 resume --task resize
has "$out" "was not paused"

# -- results and priorities in status -------------------------------------
r=$(sql "SELECT cafmq.spawn('report', '{}', priority => 7)")
sql "UPDATE cafmq.tasks_live SET state = 'running', attempt = 1, started_at = now(),
     node = 'n1' WHERE id = '$r'"
sql "SELECT cafmq.complete(ARRAY['$r']::uuid[], ARRAY[1], ARRAY['{\"rows\": 3}']::jsonb[])" >/dev/null
run 0 status "$r"
has "$out" 'priority=7'
has "$out" 'result={"rows": 3}'
has "$out" '  attempt=1 outcome=completed started='
run 0 status "$r" --json
[[ $(json 'd["result"]["rows"]') == 3 && $(json 'd["priority"]') == 7 ]] || fail "status --json result: $out"
[[ $(json '[(a["attempt"], a["outcome"], a["node"]) for a in d["attempts"]]') == "[(1, 'completed', 'n1')]" ]] \
  || fail "status --json attempts: $out"

# -- schedules --------------------------------------------------------------
run 0 schedule list
has "$out" "no schedules"
run 0 schedule add nightly --task report --cron '30 2 * * *' --tz Europe/Berlin --payload '{"full": true}' --catch-up all --catch-up-limit 3
has "$out" 'schedule "nightly" added, next tick'
run 0 schedule add beat --task ping --every 10s --catch-up skip
run 0 schedule list
has "$out" "30 2 * * *"
has "$out" "Europe/Berlin"
has "$out" "every 10s"
has "$out" "all (3)"
run 0 schedule list --json
[[ $(json '[x["name"] for x in d]') == "['beat', 'nightly']" ]] || fail "schedule list --json: $out"
[[ $(json 'd[0]["every_seconds"]') == 10 && $(json 'd[1]["catch_up"]') == all ]] || fail "schedule fields: $out"
[[ $(sql "SELECT spec->>'json' FROM cafmq.schedules WHERE name = 'nightly'") == '{"full": true}' ]] || fail "schedule payload"
run 2 schedule add bad --task x --cron '61 * * * *'
has "$err" "minute"
run 2 schedule add bad --task x --cron '* * * * *' --tz Nowhere/Land
has "$err" 'time zone "Nowhere/Land" not recognized'
run 2 schedule add bad --task x --every 10s --cron '* * * * *'
run 2 schedule add bad --task x --every 1500ms
run 2 schedule add bad --task x --every 5s --catch-up sometimes
run 2 schedule add bad --task x --cron @daily --payload '{nope'
[[ $(sql "SELECT count(*) FROM cafmq.schedules") == 2 ]] || fail "a bad schedule was written"
run 0 schedule remove beat
has "$out" 'schedule "beat" removed'
run 6 schedule remove beat
run 2 schedule

# -- channel limits ---------------------------------------------------------
run 0 limit list
has "$out" "no channel limits"
run 0 limit set mail --max-running 2 --rate 10/1m
has "$out" 'channel "mail" limited'
run 0 limit list
has "$out" "mail"
has "$out" "10/60s"
run 0 limit list --json
[[ $(json 'd[0]["max_running"]') == 2 && $(json 'd[0]["rate_limit"]') == 10 && $(json 'd[0]["rate_period_seconds"]') == 60.0 ]] || fail "limit list --json: $out"
run 2 limit set mail
run 2 limit set mail --rate 10
run 2 limit set mail --rate 0/1s
run 2 limit set mail --max-running -1
run 0 limit clear mail
has "$out" 'channel "mail" unlimited'
run 0 limit clear mail
has "$out" "had no limits"
[[ $(sql "SELECT count(*) FROM cafmq.channel_limits") == 0 ]] || fail "limit not cleared"

# -- prune and top ----------------------------------------------------------
sql "UPDATE cafmq.tasks_history SET finished_at = now() - interval '2 days' WHERE id = '$d'"
run 0 prune --older-than 1d
has "$out" "pruned 1 "
run 0 prune --older-than 1d --json
[[ $(json 'd["pruned"]') == 0 ]] || fail "prune again: $out"
run 2 prune --older-than never
# compact: nothing held, so it runs (a small table: nothing to rebuild);
# while a transaction holds a snapshot for 5 s, it refuses.
run 0 compact
has "$out" "live table: "
has "$out" "rebuilt: none"
run 0 compact --json
[[ $(json 'd["rebuilt"]') == "[]" ]] || fail "compact --json: $out"
PGAPPNAME=cli_holder psql "$url" -qc "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM cafmq.tasks_live; SELECT pg_sleep(120)" >/dev/null 2>&1 &
holder=$!
for _ in $(seq 600); do
  [[ $(sql "SELECT coalesce(extract(epoch FROM cafmq.oldest_snapshot()) >= 5, false)") == t ]] && break
  sleep 0.1
done
run 1 compact
has "$err" "kept vacuum from the live table"
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cli_holder'" >/dev/null
wait "$holder" || true
run 0 compact
run 0 top --iterations 2 --interval 100ms
[[ $(grep -c "cafmq top:" <<<"$out") == 2 ]] || fail "top refreshed $(grep -c 'cafmq top:' <<<"$out") times"
has "$out" "newest tasks:"
run 0 top --iterations 1 --json
[[ $(json 'len(d["newest"])') == 4 ]] || fail "top --json: $out"

# -- workflow show / retry / cancel -----------------------------------------
read -r wf a b c < <(python3 -c 'import uuid; print(*(uuid.uuid4() for _ in range(4)))')
spec() { # ID NAME [PARENTS-JSON]
  echo "{\"id\":\"$1\",\"name\":\"$2\",\"channel_name\":\"\",\"channel_args\":\"\",\"ordered\":false,\"max_attempts\":1,\"backoff_us\":0,\"backoff_cap_us\":0,\"workflow_id\":\"$wf\"${3:+,\"parents\":$3}}"
}
sql "SELECT count(*) FROM cafmq.spawn('[$(spec "$a" wa),$(spec "$b" wb),$(spec "$c" wc "[\"$a\",\"$b\"]")]'::json)" >/dev/null
run 0 workflow show "$wf"
has "$out" "PARENTS"
has "$out" "waiting"
has "$out" "#1,#2"
run 0 workflow show "$wf" --json
[[ $(json 'len(d["tasks"])') == 3 && $(json 'd["tasks"][2]["state"]') == waiting && $(json 'sorted(d["tasks"][2]["parents"]) == sorted(["'"$a"'", "'"$b"'"])') == True ]] || fail "workflow show --json: $out"
sql "UPDATE cafmq.tasks_live SET state = 'running', attempt = 1 WHERE id = '$a'"
sql "SELECT count(*) FROM cafmq.fail(ARRAY['$a'::uuid], ARRAY[1], ARRAY['boom'], ARRAY[false])" >/dev/null
run 0 workflow show "$wf" --json
[[ $(json 'd["tasks"][2]["state"]') == cancelled && $(json 'd["tasks"][2]["error"]') == "parent $a failed: boom" ]] || fail "child of a failed parent: $out"
run 0 workflow retry "$wf"
has "$out" "retried 1 "
run 0 workflow show "$wf" --json
[[ $(json '[t["state"] for t in d["tasks"]]') == "['pending', 'pending', 'waiting']" ]] || fail "workflow retry: $out"
run 0 workflow cancel "$wf"
has "$out" "cancelled 3,"
run 0 workflow show "$wf" --json
[[ $(json '[t["state"] for t in d["tasks"]]') == "['cancelled', 'cancelled', 'cancelled']" ]] || fail "workflow cancel: $out"
run 6 workflow show "$(python3 -c 'import uuid; print(uuid.uuid4())')"
has "$err" "no workflow"
run 2 workflow show not-an-id
run 2 workflow

# -- the config file: the [cafmq] group the runtime reads -------------------
cat >"$tmp/cafmq.ini" <<EOF
[cafmq]
database-url="$url"
retention=1h
EOF
(unset CAFMQ_DATABASE_URL; export CAFMQ_CONFIG=$tmp/cafmq.ini
 run 0 stats --live; run 0 -c "$tmp/cafmq.ini" prune --json
 [[ $(json 'd["older_than_seconds"]') == 3600.0 ]] || fail "retention from the config: $out")
echo "cli.sh: all checks passed"
