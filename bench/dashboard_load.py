# SPDX-License-Identifier: BSD-3-Clause
"""Loads the dashboard in headless Chromium three times (a fresh navigation
each) and prints the page's own timings: the document, the API calls of the
first paint, when the first task rows showed and when the finished totals
did (bench/dashboard_load.sh).

    dashboard_load.py BASE TOKEN
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "scripts"))
from webdriver import browser, wait_until  # noqa: E402

base, token = sys.argv[1:3]

with browser() as b:
    # The cookie first, so that each timed load is the page alone.
    b.go(f"{base}/?token={token}")
    print("| load | document ms | /api/stats ms | /api/tasks ms | first rows at ms "
          "| /api/stats?finished=1 ms | totals shown at ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for load in range(1, 4):
        b.js("location.reload()")
        wait_until("the first rows", lambda: b.js(
            "return document.readyState !== 'loading'"
            " && document.querySelectorAll('#tasks tbody tr[data-id]').length > 0"),
            60, 0.02)
        rows_at = b.js("return performance.now()")
        wait_until("the totals", lambda: b.js(
            "return document.getElementById('totals-note')"
            ".textContent.startsWith('finished totals as of')"), 60, 0.02)
        totals_at = b.js("return performance.now()")
        nav = b.js("const n = performance.getEntriesByType('navigation')[0];"
                   "return n.responseEnd - n.startTime")
        res = b.js("const r = {};"
                   "for (const e of performance.getEntriesByType('resource')) {"
                   "  const u = new URL(e.name);"
                   "  const k = u.pathname + (u.search.includes('finished') ? '?finished=1' : '');"
                   "  if (!(k in r)) r[k] = e.duration; }"
                   "return r")
        print(f"| {load} | {nav:.0f} | {res.get('/api/stats', 0):.0f} "
              f"| {res.get('/api/tasks', 0):.0f} | {rows_at:.0f} "
              f"| {res.get('/api/stats?finished=1', 0):.0f} | {totals_at:.0f} |")
    print("(first rows / totals shown at: ms since the navigation started, "
          "polled every 20 ms)")
