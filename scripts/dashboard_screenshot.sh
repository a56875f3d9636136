#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Makes docs/dashboard.png: a few thousand tasks in every state over three
# channels, the dashboard in headless Chromium with a failed task's detail
# open. In a fresh database of CAFMQ_DATABASE_URL (dropped after).
#
#   scripts/dashboard_screenshot.sh CLI [OUT]    (build/tools/cafmq)
set -euo pipefail
cli=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
out=${2:-$root/docs/dashboard.png}
source "$root/tests/scripts/dashboard_lib.sh"
pid=
trap '[[ -n $pid ]] && kill "$pid" && wait "$pid"; drop_database' EXIT
fresh_database cafmq_screenshot
sql() { psql "$url" -v ON_ERROR_STOP=1 -qtAc "$1"; }

# History: finished tasks of the last hours; then live ones spawned the way
# an application does, moved to their states as a runner would leave them.
psql "$url" -v ON_ERROR_STOP=1 -q -v n=4800 -v step="'2 s'" \
  -f "$root/tests/scripts/finished_tasks.sql"
spawn() { sql "SELECT cafmq.spawn($1)"; }
for i in 1 2 3 4 5 6; do
  spawn "'send_email', '{\"to\":\"user$i@example.com\",\"template\":\"welcome\"}'::jsonb, channel_name => 'mail'" >/dev/null
done
for i in 1 2 3; do
  spawn "'resize_image', '{\"key\":\"uploads/$i.jpg\",\"width\":640}'::jsonb, channel_name => 'images', run_at => now() + interval '$((i * 10)) min'" >/dev/null
done
running=$(spawn "'charge_card', '{\"order\":1041,\"amount_cents\":4999}'::jsonb, channel_name => 'billing'")
failed=$(spawn "'charge_card', '{\"order\":1042,\"amount_cents\":12900,\"card\":\"tok_visa\"}'::jsonb, channel_name => 'billing'")
done_id=$(spawn "'send_email', '{\"to\":\"ops@example.com\"}'::jsonb, channel_name => 'mail'")
sql "UPDATE cafmq.tasks_live SET state = 'running', attempt = 1, started_at = now() - interval '4 s',
       run_at = now() + interval '26 s', node = 'worker-1:4711' WHERE id = '$running'"
finish() {
  psql "$url" -v ON_ERROR_STOP=1 -qtA -v id="$1" -v state="$2" -v set="$3" \
    -f "$root/tests/scripts/finish_by_hand.sql" >/dev/null
}
# Its five attempts: three timeouts retried, one lost with its runner,
# the last declined.
attempt() {
  echo "cafmq.attempt_entry($1, now() - interval '$2 s', now() - interval '$3 s',
        '$4', '$5', 'worker-$6:4711', $7)"
}
finish "$failed" failed "attempt = 5, started_at = now() - interval '2 s',
       finished_at = now() - interval '1 s', node = 'worker-1:4711',
       created_at = now() - interval '16 s',
       last_error = 'payment gateway: card declined (insufficient_funds)',
       earlier_attempts = jsonb_build_array(
         $(attempt 1 15 14.2 failed 'payment gateway: timeout after 800 ms' 1 "now() - interval '13.2 s'"),
         $(attempt 2 13 12.1 failed 'payment gateway: timeout after 800 ms' 2 "now() - interval '10.1 s'"),
         $(attempt 3 10 9.2 failed 'payment gateway: timeout after 800 ms' 1 "now() - interval '5.2 s'"),
         $(attempt 4 5 3 lost 'lease expired' 2 NULL))"
finish "$done_id" completed "attempt = 1, started_at = now() - interval '3 s',
       finished_at = now() - interval '3 s', node = 'worker-2:4712'"

log=$(mktemp)
ok=1
serve_dashboard "$log" --chart-interval 250ms || ok=0
pid=$dashboard_pid
[[ $ok == 1 ]] || { cat "$log" >&2; exit 1; }
rm -f "$log"
PYTHONPATH="$root/tests/scripts" python3 - "$base" "$failed" "$out" <<'PY'
import sys
from webdriver import browser, wait_until
base, failed, out = sys.argv[1:4]
with browser() as b:
    b.resize(1720, 1000)
    b.go(base + "/")
    wait_until("the totals", lambda: b.js(
        "return document.getElementById('totals-note').textContent"
        ".startsWith('finished totals as of')"))
    wait_until("a few chart points", lambda: b.js(
        "return document.querySelectorAll('#c-ready polyline')[0]"
        " && Number(document.querySelector('#c-ready polyline').dataset.count) >= 8"))
    b.click('tr[data-id="%s"] td.id' % failed)
    wait_until("the detail", lambda: b.js(
        "return document.getElementById('d-id').textContent") == failed)
    b.js("window.scrollTo(0, 0)")
    print(out, b.screenshot(out), "bytes")
PY
