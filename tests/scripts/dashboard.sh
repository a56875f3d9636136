#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The web dashboard in a real browser: headless Chromium (driven through
# chromedriver, tests/scripts/dashboard_browser.py) opens it with a token,
# finds a task spawned from SQL, clicks its cancel button and waits until
# the row reads cancelled; the table then holds it cancelled. A workflow's
# graph (tests/scripts/dashboard_workflow.py) follows a cancel of its root,
# and a big batch is summed up. Screenshots go
# to OUTDIR. The charts (tests/scripts/dashboard_charts.py): a runner that
# serves the dashboard drains tasks, and the charts' points move and match
# the API's, which counts every completion once. With curl: 401 without
# the token, 403 for an action in
# read-only mode, without the CSRF header, from a foreign Origin or for a
# foreign Host, 400 for a bad id or filter. In a fresh database of the
# cluster at CAFMQ_DATABASE_URL; the dashboards listen on port 0 (the kernel
# picks) and print their address.
#
#   dashboard.sh CLI E2E OUTDIR    (cafmq, cafmq-e2e, build/tests/dashboard-screens)
set -euo pipefail
cli=$1 e2e=$2 out=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
source "$here/dashboard_lib.sh"
for tool in chromium chromedriver curl python3 psql; do
  command -v "$tool" >/dev/null \
    || { echo "FAIL: $tool is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/cafmq-dashboard.XXXXXX)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  drop_database
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  local log
  for log in "$tmp"/*.log; do [[ -f $log ]] && sed "s|^|$(basename "$log"): |" "$log" >&2; done
  exit 1
}

fresh_database cafmq_dashboard
sql() { psql "$url" -v ON_ERROR_STOP=1 -qtAc "$1"; }

# Scheduled an hour ahead, so that no runner takes it; a second one whose
# payload would run script if the page rendered it as HTML.
id=$(sql "SELECT cafmq.spawn('send_email', '{\"to\":\"a@b\"}'::jsonb,
                             run_at => now() + interval '1 hour')")
xss=$(sql "SELECT cafmq.spawn('render<img src=x onerror=\"window.pwned=1\">',
             '{\"html\":\"<script>window.pwned=1</script><img src=x onerror=window.pwned=1>\"}'::jsonb,
             run_at => now() + interval '1 hour')")
[[ $id =~ ^[0-9a-f-]{36}$ && $xss =~ ^[0-9a-f-]{36}$ ]] || fail "spawn returned '$id' '$xss'"

# Serves `cafmq dashboard ARGS...` on port 0; sets $base to its address.
start_dashboard() {
  local name=$1; shift
  serve_dashboard "$tmp/$name.log" "$@" || fail "the $name dashboard did not start"
  pids+=("$dashboard_pid")
}
# The HTTP status of a curl request.
status() { curl -s -o "$tmp/body" -w '%{http_code}' "$@"; }
expect() {
  local want=$1 what=$2; shift 2
  local got; got=$(status "$@")
  [[ $got == "$want" ]] || fail "$what: HTTP $got, expected $want: $(cat "$tmp/body")"
}

token=t0k3n-$RANDOM$RANDOM
start_dashboard main --token "$token"
main=$base
auth=(-H "Authorization: Bearer $token")
expect 401 "the API without the token" "$main/api/tasks"
expect 401 "the page without the token" "$main/"
expect 401 "a wrong token" -H "Authorization: Bearer wrong" "$main/api/tasks"
expect 200 "the API with the token" "${auth[@]}" "$main/api/tasks"
grep -q "$id" "$tmp/body" || fail "the listing lacks the task: $(cat "$tmp/body")"
expect 400 "a bad id" "${auth[@]}" "$main/api/tasks/not-a-uuid"
expect 400 "a bad state filter" "${auth[@]}" "$main/api/tasks?state=sleeping"
expect 400 "a bad age filter" "${auth[@]}" "$main/api/tasks?older_than=soon"
grep -q '"error":"bad_request"' "$tmp/body" || fail "a 400 without a JSON error: $(cat "$tmp/body")"
expect 404 "an unknown id" "${auth[@]}" "$main/api/tasks/00000000-0000-7000-8000-000000000000"
expect 400 "an action on a bad id" "${auth[@]}" -X POST -d "" "$main/api/tasks/12345/cancel"

# ?token= trades the token for an HttpOnly SameSite=Strict session cookie.
jar=$tmp/cookies
expect 303 "the token link" -c "$jar" -D "$tmp/headers" "$main/?token=$token"
grep -qi '^set-cookie: cafmq_dashboard=.*HttpOnly; SameSite=Strict' "$tmp/headers" \
  || fail "no HttpOnly SameSite=Strict cookie: $(cat "$tmp/headers")"
grep -q "$token" "$jar" && fail "the cookie holds the token itself"
expect 200 "the page with the cookie" -b "$jar" "$main/"
csrf=$(sed -n 's|.*<meta name="csrf-token" content="\([0-9a-f]*\)">.*|\1|p' "$tmp/body")
[[ ${#csrf} -eq 64 ]] || fail "no CSRF token in the page"
expect 403 "a POST without the CSRF header" -b "$jar" -X POST -d "" \
  "$main/api/tasks/$id/cancel"
expect 403 "a POST with a wrong CSRF header" -b "$jar" -X POST -d "" \
  -H "X-CSRF-Token: wrong" "$main/api/tasks/$id/cancel"
expect 403 "a POST from a foreign Origin" -b "$jar" -X POST -d "" \
  -H "X-CSRF-Token: $csrf" -H "Origin: http://evil.example" "$main/api/tasks/$id/cancel"
expect 403 "a cross-site POST" -b "$jar" -X POST -d "" -H "X-CSRF-Token: $csrf" \
  -H "Sec-Fetch-Site: cross-site" "$main/api/tasks/$id/cancel"
[[ $(sql "SELECT state FROM cafmq.tasks WHERE id = '$id'") == pending ]] \
  || fail "a refused POST changed the task"

# Read-only, and without a token: loopback Host names only.
start_dashboard readonly --read-only
ro=$base
expect 200 "the read-only page" "$ro/"
ro_csrf=$(sed -n 's|.*<meta name="csrf-token" content="\([0-9a-f]*\)">.*|\1|p' "$tmp/body")
expect 403 "an action in read-only mode" -X POST -d "" -H "X-CSRF-Token: $ro_csrf" \
  "$ro/api/tasks/$id/cancel"
grep -q '"error":"read_only"' "$tmp/body" || fail "read-only 403 without its reason: $(cat "$tmp/body")"
expect 403 "a foreign Host (DNS rebinding)" -H "Host: evil.example" "$ro/api/tasks"
expect 200 "the open dashboard's API" "$ro/api/stats"

# A workflow: root, B and C after it, D after both (runs even after a
# failure); and a batch of 40 members with a callback after all of them.
spec() { # ID NAME WORKFLOW PARENTS(sql list) POLICY
  echo "json_build_object('id', '$1', 'name', '$2', 'channel_name', '',
    'channel_args', '', 'ordered', false, 'max_attempts', 1, 'backoff_us', 0,
    'backoff_cap_us', 0, 'workflow_id', '$3', 'on_parent_failure', '$5',
    'run_at_us', (extract(epoch FROM now() + interval '1 hour') * 1e6)::bigint,
    'parents', json_build_array($4))"
}
read -r wf root b c d big <<<"$(sql "SELECT string_agg(gen_random_uuid()::text, ' ')
                                      FROM generate_series(1, 6)")"
sql "SELECT count(*) FROM cafmq.spawn(json_build_array($(spec "$root" fetch "$wf" "" cancel),
       $(spec "$b" charge "$wf" "'$root'" cancel), $(spec "$c" reserve "$wf" "'$root'" cancel),
       $(spec "$d" close_order "$wf" "'$b', '$c'" run)))" >/dev/null
members=$(for i in $(seq 40); do echo "$(spec "$(sql "SELECT gen_random_uuid()")" member "$big" "" cancel),"; done)
sql "WITH m AS (SELECT * FROM cafmq.spawn(json_build_array(${members%,})))
     SELECT count(*) FROM m" >/dev/null
sql "SELECT count(*) FROM cafmq.spawn(json_build_array($(spec "$(sql "SELECT gen_random_uuid()")" \
       on_finish "$big" "$(sql "SELECT string_agg(quote_literal(id::text), ', ')
                                 FROM cafmq.tasks WHERE workflow_id = '$big'")" run)))" >/dev/null
[[ $(sql "SELECT count(*) FROM cafmq.tasks WHERE workflow_id IN ('$wf', '$big')") == 45 ]] \
  || fail "the workflows were not spawned"
expect 200 "a workflow" "${auth[@]}" "$main/api/workflows/$wf"
[[ $(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["tasks"]))' <"$tmp/body") == 4 ]] \
  || fail "the workflow's API lacks tasks: $(cat "$tmp/body")"
expect 404 "an unknown workflow" "${auth[@]}" "$main/api/workflows/$id"
expect 400 "a bad workflow id" "${auth[@]}" "$main/api/workflows/nope"
expect 403 "a workflow's cancel in read-only mode" -X POST -d "" -H "X-CSRF-Token: $ro_csrf" \
  "$ro/api/workflows/$wf/cancel"
expect 403 "a workflow's retry without the CSRF header" -b "$jar" -X POST -d "" \
  "$main/api/workflows/$wf/retry"

# The browser: find the task, cancel it, wait for the row to say so.
python3 "$here/dashboard_browser.py" "$main" "$token" "$id" "$xss" "$out" \
  >"$tmp/browser.log" 2>&1 || fail "the browser run failed"
[[ $(sql "SELECT state FROM cafmq.tasks WHERE id = '$id'") == cancelled ]] \
  || fail "the table does not hold the task cancelled: $(sql "SELECT state FROM cafmq.tasks WHERE id = '$id'")"
[[ $(sql "SELECT state FROM cafmq.tasks WHERE id = '$xss'") == pending ]] \
  || fail "the other task changed"
sed 's/^/browser: /' "$tmp/browser.log"
# The workflow's graph, followed live through a cancel.
python3 "$here/dashboard_workflow.py" "$main" "$token" "$root" "$b" "$c" "$d" "$big" "$out" \
  >"$tmp/workflow.log" 2>&1 || fail "the workflow graph run failed"
[[ $(sql "SELECT string_agg(state::text, ',' ORDER BY seq) FROM cafmq.tasks
          WHERE workflow_id = '$wf'") == cancelled,cancelled,cancelled,cancelled ]] \
  || fail "the table does not hold the workflow cancelled"
sed 's/^/workflow: /' "$tmp/workflow.log"

# The charts during a drain: a runner with 4 handlers serves the dashboard
# (charts sampled every 300 ms); once the page shows them, 400 tasks of
# 100 ms each (about 10 s of work) arrive in three channels.
source "$here/load.sh"
CAFMQ_E2E_SIGNALS=1 CAFMQ_E2E_DASHBOARD=127.0.0.1:0 CAFMQ_E2E_METRICS_QUEUE_MS=300 \
  "$e2e" runner "$url" charts 4 4 >"$tmp/runner.log" 2>&1 &
pids+=($!)
runner_board=
for _ in $(seq 200); do
  runner_board=$(sed -n 's/.*msg="serving the dashboard".* port=\([0-9]*\).*/\1/p' "$tmp/runner.log")
  [[ -n $runner_board ]] && break
  sleep 0.05
done
[[ -n $runner_board ]] || fail "the runner does not serve its dashboard"
n=400
python3 "$here/dashboard_charts.py" "http://127.0.0.1:$runner_board" "$n" "$tmp/ready" "$out" \
  >"$tmp/charts.log" 2>&1 &
charts=$!
for _ in $(seq 600); do [[ -e $tmp/ready ]] && break; kill -0 "$charts" 2>/dev/null || break; sleep 0.1; done
[[ -e $tmp/ready ]] || { wait "$charts" || true; fail "the charts did not load"; }
spawn_load "$n" 3 100
# And one task whose three attempts fail, for its time line.
sql "SELECT cafmq.spawn('fail_always', NULL, max_attempts => 3,
                        backoff => '200 ms', backoff_cap => '200 ms')" >/dev/null
wait "$charts" || fail "the charts run failed"
[[ $(sql "SELECT count(*) FROM cafmq.tasks WHERE state = 'completed'") == "$n" ]] \
  || fail "not every task completed"
sed 's/^/charts: /' "$tmp/charts.log"
echo "dashboard: ok (screenshots in $out)"
