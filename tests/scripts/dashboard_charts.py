# SPDX-License-Identifier: BSD-3-Clause
"""For tests/scripts/dashboard.sh, in headless Chromium: opens the dashboard
a runner serves, touches READY once the charts have loaded (the script then
spawns N tasks), and while the runner drains them checks that the charts'
points move and match /api/series: the completed rate of the last point
drawn, the number of points, and the handler occupancy. Once every task
completed, the completions the API counted over its points are exactly N.
Opens a completed task's time line, and that of the task that failed all
of its three attempts: each attempt drawn with its ending, as the API
lists them. Saves screenshots to OUTDIR.

    dashboard_charts.py BASE N READY OUTDIR
"""
import json
import os
import sys
import time
import urllib.request

from webdriver import browser, wait_until

base, n, ready, outdir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
os.makedirs(outdir, exist_ok=True)


def api(path):
    with urllib.request.urlopen(base + path, timeout=30) as r:
        return json.load(r)


def close(x, y):
    return abs(x - y) <= 1e-9 * max(1.0, abs(x), abs(y))


with browser() as b:
    b.go(base + "/")
    wait_until("the charts", lambda: "so far" in b.js(
        "return document.getElementById('chart-note').textContent"))
    open(ready, "w").close()

    def drawn():
        """The rate chart's completed line and the time of its last point."""
        return b.js("""
          const l = document.querySelector('#c-rate polyline[data-series=completed]');
          const occ = (name) => document.querySelector(
            '#c-occ polyline[data-series=' + name + ']');
          return {at: document.getElementById('charts').dataset.at,
                  count: l ? Number(l.dataset.count) : 0,
                  last: l && l.dataset.last !== '' ? Number(l.dataset.last) : null,
                  occ_hidden: document.getElementById('f-occ').hidden,
                  running: occ('running') ? Number(occ('running').dataset.last) : null,
                  slots: occ('slots') ? Number(occ('slots').dataset.last) : null};""")

    # The drain shows: a point with completions is drawn, and it matches
    # the API's point of the same time. The API may be ahead, and a point
    # of the last minute may be recounted after the page drew it: compare
    # until they agree (the page redraws every 1.5 s).
    mismatch = []

    def matching():
        d = drawn()
        if not d["last"]:
            return None
        series = api("/api/series")
        points = {p["at"]: p for p in series["points"]}
        p = points.get(d["at"])
        if p is None:
            mismatch[:] = [f"the chart's last point {d['at']} is not in the API's"]
            return None
        rated = [q for q in series["points"] if q["seconds"] > 0 and q["at"] <= d["at"]]
        why = []
        if not close(d["last"], p["completed"] / p["seconds"]):
            why.append(f"the chart says {d['last']}/s, the API {p['completed']}/{p['seconds']} s")
        if d["count"] != len(rated):
            why.append(f"the chart has {d['count']} points, the API {len(rated)}")
        if d["occ_hidden"] or p["handlers"] is None:
            why.append("a runner serves the dashboard but there is no occupancy chart")
        elif d["slots"] != p["handlers"]["slots"] or d["running"] != p["handlers"]["running"]:
            why.append(f"occupancy drawn {d['running']}/{d['slots']}, API {p['handlers']}")
        mismatch[:] = why
        return None if why else d

    deadline = time.monotonic() + 60
    first = matching()
    while first is None and time.monotonic() < deadline:
        time.sleep(0.2)
        first = matching()
    if first is None:
        sys.exit("FAIL: no chart point with completions matches the API: "
                 + ("; ".join(mismatch) or "none drawn"))
    print(f"chart point {first['at']}: {first['last']:.1f} completed/s, "
          f"{first['running']} of {first['slots']} handlers, as the API says")

    # The points move: later points are drawn.
    wait_until("more points drawn",
               lambda: drawn()["count"] > first["count"] + 8)
    print("the charts moved on: %d points" % drawn()["count"])
    b.screenshot(os.path.join(outdir, "4-charts.png"))

    # Every task completed; the API counted each once over its points.
    def counted():
        pts = api("/api/series")["points"]
        return sum(q["completed"] for q in pts) == n and pts
    pts = wait_until(f"the API's points to count {n} completions", counted,
                     timeout=120)
    peak = max(q["spawned"] / q["seconds"] for q in pts if q["seconds"] > 0)
    if peak <= 0:
        sys.exit("FAIL: no spawns counted")
    print(f"the API's points count {n} completions; spawned peaked at {peak:.0f}/s")

    # A completed task's time line: queued, then running, then completed.
    b.js("document.getElementById('f-state').value = 'completed'")
    b.click("#filters button.primary")
    wait_until("a completed task in the list", lambda: b.js(
        "return !!document.querySelector('#tasks tr[data-state=completed] td.id')"))
    b.click("#tasks tr[data-state=completed] td.id")
    parts = wait_until("the time line", lambda: b.js(
        "return [...document.querySelectorAll('#d-timeline rect')]"
        ".map((r) => r.dataset.part)"))
    if parts[-2:] != ["running", "completed"] or "queued" not in parts:
        sys.exit(f"FAIL: the time line shows {parts}")
    print(f"a completed task's time line: {' -> '.join(parts)}")
    b.screenshot(os.path.join(outdir, "5-timeline.png"))

    # A task whose three attempts failed: each drawn, running then failed,
    # with the waits for its retries between them, as the API lists them.
    b.js("document.getElementById('f-state').value = 'failed'")
    b.click("#filters button.primary")
    failed = wait_until("the failed task in the list", lambda: b.js(
        "const r = document.querySelector('#tasks tr[data-state=failed]');"
        "return r ? r.dataset.id : null"), timeout=60)
    b.click("#tasks tr[data-state=failed] td.id")
    wait_until("its detail", lambda: b.js(
        "return document.getElementById('d-id').textContent") == failed)
    attempts = api(f"/api/tasks/{failed}")["attempts"]
    if [(a["attempt"], a["outcome"]) for a in attempts] != [
            (1, "failed"), (2, "failed"), (3, "failed")]:
        sys.exit(f"FAIL: the API lists the attempts {attempts}")
    drawn = b.js("return [...document.querySelectorAll('#d-timeline rect')]"
                 ".map((r) => [r.dataset.part, r.dataset.attempt || ''])")
    ran = [p for p in drawn if p[0] in ("running", "failed")]
    want = [[p, str(i)] for i in (1, 2, 3) for p in ("running", "failed")]
    if ran != want or [p[0] for p in drawn].count("backoff") != 2:
        sys.exit(f"FAIL: the failed task's time line shows {drawn}")
    listed = b.js("return [...document.querySelectorAll('#d-attempts li')]"
                  ".map((li) => li.textContent)")
    if len(listed) != 3 or any(f"attempt {i + 1} fails" not in x
                               for i, x in enumerate(listed)):
        sys.exit(f"FAIL: the attempts listed are {listed}")
    print("a failed task's time line: " + " -> ".join(
        p + (f"({a})" if a else "") for p, a in drawn))
    b.screenshot(os.path.join(outdir, "6-attempts.png"))
