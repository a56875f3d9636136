#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A real Prometheus (Debian's) scrapes a runner every second while it drains
# 3,000 tasks, and `cafmq metrics` beside it. Through Prometheus's HTTP API:
# the runner's completed counter equals the completed rows in the table,
# and exactly one of the two exports the queue-level gauges (one exporter
# per cluster). The same Prometheus loads the shipped rules
# (config/prometheus): each evaluates without error, every metric they name
# is exported by the runner or the tool, and the cookbook's recorded series
# (recording.yml) describe the drain. On a throw-away cluster (a copy of
# scripts/pg.sh).
#
#   prometheus.sh E2E CLI RULES_DIR   (cafmq-e2e, cafmq, config/prometheus)
set -euo pipefail
e2e=$1 cli=$2 rules=$3
source "$(dirname "${BASH_SOURCE[0]}")/throwaway.sh"
source "$(dirname "${BASH_SOURCE[0]}")/load.sh"
command -v prometheus >/dev/null || { echo "FAIL: prometheus is not installed (apt-get install prometheus)" >&2; exit 1; }
runner_pid= tool_pid= prom_pid=
on_exit+=('[[ -n $runner_pid ]] && kill -9 "$runner_pid" 2>/dev/null'
          '[[ -n $tool_pid ]] && kill -9 "$tool_pid" 2>/dev/null'
          '[[ -n $prom_pid ]] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid"')
fail() {
  echo "FAIL: $*" >&2
  for f in runner tool prometheus; do
    [[ -f $tmp/$f.log ]] && tail -n 30 "$tmp/$f.log" | sed "s/^/$f: /" >&2
  done
  exit 1
}

# Runs `cond` (a command) every 0.1 s until it succeeds, `limit` s at most
# by the clock (each try may be slow on a loaded machine).
wait_until() {
  local limit=$1 what=$2; shift 2
  local until=$((SECONDS + limit))
  while ((SECONDS < until)); do
    "$@" && return 0
    sleep 0.1
  done
  "$@" && return 0
  fail "$what within $limit s"
}

pg start >/dev/null
url=$(pg url)
sql() { psql "$url" -v ON_ERROR_STOP=1 -qtAc "$1"; }
CAFMQ_DATABASE_URL=$url "$cli" migrate >/dev/null

# The endpoints take any free port and log it.
address_in() { sed -n 's/.*msg="serving metrics" address=\([^ ]*\).*/\1/p' "$1" | head -n 1; }
CAFMQ_E2E_SIGNALS=1 CAFMQ_E2E_METRICS=:0 CAFMQ_E2E_METRICS_QUEUE_MS=500 "$e2e" runner "$url" prom 4 8 >"$tmp/runner.log" 2>&1 &
runner_pid=$!
wait_until 20 "the runner serves no metrics" grep -q 'msg="serving metrics"' "$tmp/runner.log"
runner_at=$(address_in "$tmp/runner.log")
# The runner's first scrape takes the cluster's lock: it exports the queue
# gauges, and the tool started next does not.
curl -sf "http://$runner_at/metrics" | grep -qx 'cafmq_queue_exporter 1' \
  || fail "the runner's first scrape did not export the queue gauges"
CAFMQ_DATABASE_URL=$url "$cli" metrics --listen 127.0.0.1:0 --interval 0s >"$tmp/tool.log" 2>&1 &
tool_pid=$!
wait_until 20 "cafmq metrics serves nothing" grep -q 'msg="serving metrics"' "$tmp/tool.log"
tool_at=$(address_in "$tmp/tool.log")

# Prometheus on a port below the ephemeral range; another one if taken.
cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ['$rules/alerts.yml', '$rules/recording.yml']
scrape_configs:
  - job_name: cafmq
    static_configs:
      - targets: ['$runner_at', '$tool_at']
YML
promtool check config "$tmp/prometheus.yml" >/dev/null || fail "promtool rejects the config"
for _ in 1 2 3 4 5; do
  pport=$((20000 + RANDOM % 12000))
  prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
    --web.listen-address=127.0.0.1:$pport >"$tmp/prometheus.log" 2>&1 &
  prom_pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$pport/-/ready" >/dev/null && break
    kill -0 "$prom_pid" 2>/dev/null || break
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$pport/-/ready" >/dev/null && break
  kill "$prom_pid" 2>/dev/null; wait "$prom_pid" 2>/dev/null || true
  prom_pid=
done
[[ -n $prom_pid ]] || fail "Prometheus did not start"

# The value of an instant PromQL query, "" while it has no result.
query() {
  curl -s -G "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" \
    | python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")'
}
equals() { [[ $(query "$1") == "$2" ]]; }

# Both targets are up (the first scrape waits for target discovery, ~5 s).
wait_until 30 "Prometheus did not scrape both targets" equals 'sum(up{job="cafmq"})' 2
# Then the drain, scraped every second.
n=3000
spawn_load "$n" 5
sql "SELECT count(*) FROM cafmq.spawn((SELECT json_agg(json_build_object(
       'id', gen_random_uuid(), 'name', 'nobody', 'channel_name', 'idle',
       'channel_args', '', 'ordered', false, 'max_attempts', 1,
       'backoff_us', 1000000, 'backoff_cap_us', 1000000))
       FROM generate_series(1, 7)))" >/dev/null
completed() { [[ $(sql "SELECT count(*) FROM cafmq.tasks WHERE state = 'completed'") == "$n" ]]; }
wait_until 60 "the runner did not complete every task" completed
wait_until 60 "Prometheus's completed count is not the table's ($(query 'sum(cafmq_tasks_completed_total)'))" \
  equals 'sum(cafmq_tasks_completed_total)' "$n"
[[ $(query 'sum(cafmq_tasks_claimed_total)') == "$n" ]] \
  || fail "claimed $(query 'sum(cafmq_tasks_claimed_total)'), want $n"
[[ $(query 'cafmq_handler_duration_seconds_count{task="record"}') == "$n" ]] \
  || fail "handler durations: $(query 'cafmq_handler_duration_seconds_count{task="record"}')"
# One claimed task in 16 reports its pickup latency: those its id's hash picks.
picked=$(sql "SELECT count(*) FROM cafmq.tasks WHERE state = 'completed'
              AND (hashtext(id::text) & 2147483647) % 16 = 0")
[[ $(query 'sum(cafmq_pickup_latency_seconds_count)') == "$picked" ]] \
  || fail "pickup latencies: $(query 'sum(cafmq_pickup_latency_seconds_count)'), want $picked"
# One exporter per cluster: the runner took the lock, the tool did not.
[[ $(query "cafmq_queue_exporter{instance=\"$runner_at\"}") == 1 ]] || fail "the runner does not export the queue gauges"
[[ $(query "cafmq_queue_exporter{instance=\"$tool_at\"}") == 0 ]] || fail "cafmq metrics exports them too"
# The queue-level gauges: 7 tasks no runner handles wait in channel "idle";
# every other task completed within the last minute.
[[ $(query 'cafmq_queue_depth{channel="idle",state="pending"}') == 7 ]] \
  || fail "depth of idle: $(query 'cafmq_queue_depth{channel="idle",state="pending"}'), want 7"
[[ $(query 'cafmq_queue_ready{channel="idle"}') == 7 ]] || fail "ready in idle: $(query 'cafmq_queue_ready{channel="idle"}')"
wait_until 10 "completed in the last minute is not $n" \
  equals 'sum(cafmq_queue_finished_last_minute{state="completed"})' "$n"
# The connections gauge counts the runtime's own connections (claim, and
# claim_ids, write, renew, admin, upkeep, listen and session once used):
# those the database shows by their application names.
held() {
  local db gauge
  db=$(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
             AND application_name IN ('cafmq claim', 'cafmq claim_ids',
                                      'cafmq write', 'cafmq renew',
                                      'cafmq admin', 'cafmq upkeep',
                                      'cafmq listen',
                                      'cafmq session')")
  gauge=$(curl -sf "http://$runner_at/metrics" | awk '$1 == "cafmq_connections" {print $2}')
  ((db >= 2)) && [[ $gauge == "$db" ]]
}
wait_until 60 "cafmq_connections is not the runtime's connections in pg_stat_activity" held
# The rules: all loaded, each evaluated without error.
rules_ok() {
  curl -sf "http://127.0.0.1:$pport/api/v1/rules" | python3 -c 'import json, sys
rules = [r for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]]
want = int(sys.argv[1])
bad = [r["name"] for r in rules if r.get("health") != "ok"]
sys.exit(0 if len(rules) == want and not bad else 1)' "$1"
}
nrules=$(cat "$rules/alerts.yml" "$rules/recording.yml" | grep -cE '^ *- (alert|record):')
wait_until 30 "Prometheus did not evaluate the $nrules rules without error" rules_ok "$nrules"
# The cookbook's series describe the drain: at some evaluation since the
# start (every second; the drain may be over by now, however long ago),
# the runner completed and claimed "record" tasks, sampled pickup
# latencies and handler durations, used some of its handler slots; 7 tasks
# wait in "idle".
# Four handlers held for 3 s each: slots are in use at several scrapes
# however fast the machine ran the drain (it may fit between two).
sql "SELECT count(*) FROM cafmq.spawn((SELECT json_agg(json_build_object(
       'id', gen_random_uuid(), 'name', 'hold', 'channel_name', 'held',
       'channel_args', i::text, 'ordered', false, 'max_attempts', 1,
       'backoff_us', 1000000, 'backoff_cap_us', 1000000, 'json', '3000'))
       FROM generate_series(1, 4) i))" >/dev/null
positive() { python3 -c 'import sys; v = sys.argv[1]; sys.exit(0 if v and 0 < float(v) < 1e9 else 1)' "$(query "$1")"; }
for q in 'task:cafmq_tasks_completed:rate1m{task="record"}' 'task:cafmq_tasks_claimed:rate1m{task="record"}' \
         'cafmq_pickup_latency_seconds:p50_5m' 'cafmq_pickup_latency_seconds:p99_5m' \
         'task:cafmq_handler_duration_seconds:p95_5m{task="record"}' \
         "instance:cafmq_handler_occupancy:ratio{instance=\"$runner_at\"}"; do
  q="max_over_time(${q}[1h])"
  wait_until 30 "$q is not a positive number ($(query "$q"))" positive "$q"
done
wait_until 30 "channel:cafmq_queue_ready:sum of idle is not 7" equals 'channel:cafmq_queue_ready:sum{channel="idle"}' 7
# Every metric a rule names is one a runner or the tool exports.
exported=$( { curl -sf "http://$runner_at/metrics"; curl -sf "http://$tool_at/metrics"; } \
  | sed -n 's/^\(cafmq_[a-z_]*\).*/\1/p' | sort -u)
for name in $(sed '/^ *#/d; s/record:.*//; s/[a-z]*:cafmq_[a-z_]*:[a-z0-9_]*//g' "$rules/alerts.yml" "$rules/recording.yml" \
                | grep -o 'cafmq_[a-z_]*' | sed 's/_bucket$//' | sort -u); do
  grep -qx "$name" <<<"$exported" || grep -qx "${name}_bucket" <<<"$exported" \
    || fail "a rule names $name, which nobody exports"
done
kill "$prom_pid"
wait "$prom_pid" || true
prom_pid=

# The runner stops: the tool takes the lock at its next scrape.
gone() { ! kill -0 "$1" 2>/dev/null; }
kill -TERM "$runner_pid"
wait_until 60 "the runner did not stop" gone "$runner_pid"
wait "$runner_pid" || fail "the runner exited with status $?"
runner_pid=
exporting() { curl -sf "http://$tool_at/metrics" | grep -qx 'cafmq_queue_exporter 1'; }
wait_until 60 "cafmq metrics did not take over the queue gauges" exporting
kill -TERM "$tool_pid"
wait_until 60 "cafmq metrics did not stop" gone "$tool_pid"
wait "$tool_pid" || fail "cafmq metrics exited with status $?"
tool_pid=
echo "prometheus: ok ($n completed, counted by Prometheus; one queue exporter; $nrules rules evaluated)"
