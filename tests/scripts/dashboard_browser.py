# SPDX-License-Identifier: BSD-3-Clause
"""For tests/scripts/dashboard.sh, in headless Chromium: opens the dashboard
with its token, finds the task, opens the detail of the task with markup in
its name and payload (which must show as text and run nothing), clicks
cancel on the task and waits until its row reads cancelled. Saves
screenshots to OUTDIR.

    dashboard_browser.py BASE TOKEN TASK_ID XSS_TASK_ID OUTDIR
"""
import os
import sys

from webdriver import browser, wait_until

base, token, task, xss, outdir = sys.argv[1:6]
os.makedirs(outdir, exist_ok=True)

with browser() as b:
    def screenshot(name):
        size = b.screenshot(os.path.join(outdir, name))
        print(f"screenshot {name} ({size} bytes)")

    row = 'tr[data-id="%s"]' % task
    b.go(f"{base}/?token={token}")
    wait_until("the task's row",
               lambda: b.js("return !!document.querySelector(arguments[0])", row))
    wait_until("the finished totals",
               lambda: b.js("return document.getElementById('totals-note')"
                            ".textContent.startsWith('finished totals as of')"))
    state = b.js("return document.querySelector(arguments[0] + ' td.state')"
                 ".textContent", row)
    print(f"found task {task} in the list, state {state}")
    screenshot("1-list.png")

    # Markup in a name and a payload is shown as text and runs nothing.
    b.click('tr[data-id="%s"] td.id' % xss)
    wait_until("the detail of the task with markup",
               lambda: b.js("return document.getElementById('d-id').textContent")
               == xss)
    payload = b.js("return document.getElementById('d-payload').textContent")
    if "<script>window.pwned=1</script>" not in payload:
        sys.exit(f"FAIL: the payload is not shown as text: {payload!r}")
    if b.js("return typeof window.pwned") != "undefined":
        sys.exit("FAIL: markup in a task ran as script")
    if b.js("return document.querySelectorAll('#tasks img, #detail img').length"):
        sys.exit("FAIL: markup in a task became an element")
    print("markup in a task's name and payload shows as text")
    screenshot("2-detail.png")
    b.click("#d-close")

    b.click(row + " button.cancel")
    wait_until("the row to read cancelled", lambda: b.js(
        "const r = document.querySelector(arguments[0]);"
        "return r !== null && r.dataset.state === 'cancelled'"
        " && r.querySelector('td.state').textContent === 'cancelled'", row))
    print("clicked cancel; the row reads cancelled")
    screenshot("3-cancelled.png")
