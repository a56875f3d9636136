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
    print("| load | document | /api/stats | /api/tasks | first rows' data in "
          "| /api/stats?finished=1 | totals' data in |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for load in range(1, 4):
        b.js("location.reload()")
        wait_until("the first rows", lambda: b.js(
            "return document.readyState !== 'loading'"
            " && document.querySelectorAll('#tasks tbody tr[data-id]').length > 0"),
            60, 0.25)
        wait_until("the totals", lambda: b.js(
            "return document.getElementById('totals-note')"
            ".textContent.startsWith('finished totals as of')"), 60, 0.25)
        # Each request's duration and when its answer was in (ms since the
        # navigation started), from the page's own resource timing.
        t = b.js("const r = {};"
                 "const n = performance.getEntriesByType('navigation')[0];"
                 "r.document = [n.responseEnd - n.startTime, n.responseEnd];"
                 "for (const e of performance.getEntriesByType('resource')) {"
                 "  const u = new URL(e.name);"
                 "  const k = u.pathname + (u.search.includes('finished') ? '?finished=1' : '');"
                 "  if (!(k in r)) r[k] = [e.duration, e.responseEnd]; }"
                 "return r")
        rows = max(t["/api/stats"][1], t["/api/tasks"][1])
        print(f"| {load} | {t['document'][0]:.0f} | {t['/api/stats'][0]:.0f} "
              f"| {t['/api/tasks'][0]:.0f} | {rows:.0f} "
              f"| {t['/api/stats?finished=1'][0]:.0f} "
              f"| {t['/api/stats?finished=1'][1]:.0f} |")
    print("(ms; a request's duration, or when its answer was in since the "
          "navigation started)")
