# SPDX-License-Identifier: BSD-3-Clause
"""For tests/scripts/dashboard.sh, in headless Chromium: a workflow's graph.

The small workflow: ROOT (pending), B and C after it (waiting, policy
cancel), D after B and C (waiting, runs even after a failed parent). Opens
ROOT's detail, follows its workflow button to the graph, and checks the
boxes' states, their columns (parents left of children) and the edges (D's
dashed). Cancels ROOT with its row's button: the graph follows, B and C end
cancelled, D becomes pending; "Cancel unfinished" then cancels D. The big
workflow (BIG: 40 members and a callback after all of them), opened by its
#workflow= link, shows 30 members and one box summing up the other 10.
Screenshots go to OUTDIR.

    dashboard_workflow.py BASE TOKEN ROOT B C D BIG OUTDIR
"""
import os
import sys

from webdriver import browser, wait_until

base, token, root, b_id, c_id, d_id, big, outdir = sys.argv[1:9]
os.makedirs(outdir, exist_ok=True)

NODES = "return [...document.querySelectorAll('#w-graph g.wf-node')].map((g) => " \
        "({id: g.dataset.id, state: g.dataset.state, " \
        "x: g.transform.baseVal[0].matrix.e}))"
EDGES = "return [...document.querySelectorAll('#w-graph path.wf-edge')].map((p) => " \
        "[p.dataset.from, p.dataset.to, p.classList.contains('run')])"


def fail(why):
    sys.exit("FAIL: " + why)


with browser() as b:
    def screenshot(name):
        size = b.screenshot(os.path.join(outdir, name))
        print(f"screenshot {name} ({size} bytes)")

    def graph_screenshot(name):
        # The detail floats over the page: closed, and the graph in view.
        if b.js("return !document.getElementById('detail').hidden"):
            b.click("#d-close")
        b.js("document.getElementById('workflow').scrollIntoView()")
        screenshot(name)

    def states():
        return {n["id"]: n["state"] for n in b.js(NODES)}

    def wait_states(what, want):
        wait_until(what, lambda: states() == want)

    b.go(f"{base}/?token={token}")
    row = 'tr[data-id="%s"]' % root
    wait_until("the root task's row",
               lambda: b.js("return !!document.querySelector(arguments[0])", row))
    b.click(row + " td.id")
    wait_until("the workflow button in the detail",
               lambda: b.js("return !!document.getElementById('d-workflow')"))
    b.click("#d-workflow")
    wait_states("the graph of four tasks", {root: "pending", b_id: "waiting",
                                            c_id: "waiting", d_id: "waiting"})
    x = {n["id"]: n["x"] for n in b.js(NODES)}
    if not (x[root] < x[b_id] == x[c_id] < x[d_id]):
        fail(f"the columns do not follow the parents: {x}")
    edges = sorted(tuple(e) for e in b.js(EDGES))
    want = sorted([(root, b_id, False), (root, c_id, False),
                   (b_id, d_id, True), (c_id, d_id, True)])
    if edges != want:
        fail(f"the edges are {edges}, expected {want}")
    note = b.js("return document.getElementById('w-note').textContent")
    if not note.startswith("4 tasks: 3 waiting, 1 pending"):
        fail(f"the workflow's note reads {note!r}")
    print("the graph: 4 boxes in 3 columns, 4 edges (2 dashed: D runs after a failure)")
    graph_screenshot("4-workflow.png")

    # A box opens its task's detail.
    b.click('#w-graph g.wf-node[data-id="%s"]' % d_id)
    wait_until("D's detail", lambda: b.js(
        "return document.getElementById('d-id').textContent") == d_id)
    # The detail floats over the list's right side, where the row's buttons
    # are: closed before the next click.
    b.click("#d-close")
    wait_until("the detail to close", lambda: b.js(
        "return document.getElementById('detail').hidden"))

    # Cancelling the root: its cancel policy children follow, D may run.
    b.click(row + " button.cancel")
    wait_states("the graph after the root's cancel", {
        root: "cancelled", b_id: "cancelled", c_id: "cancelled", d_id: "pending"})
    print("cancelled the root: the graph shows B and C cancelled, D pending")
    graph_screenshot("5-workflow-cancelled.png")
    b.click("#w-cancel")
    wait_states("the graph after cancelling the workflow", {
        root: "cancelled", b_id: "cancelled", c_id: "cancelled", d_id: "cancelled"})
    if not b.js("return document.getElementById('w-cancel').hidden"):
        fail("the cancel button stays with nothing left to cancel")
    print("'Cancel unfinished' cancelled D")

    # A big batch: 30 members drawn, the other 10 summed up in one box.
    b.go(f"{base}/#workflow={big}")
    wait_until("the big workflow's graph", lambda: b.js(
        "return document.getElementById('w-id').textContent") == big)
    shown = len(b.js(NODES))
    more = b.js("const g = document.querySelector('#w-graph g.wf-more');"
                "return g ? g.dataset.count : null")
    if shown != 31 or more != "10":
        fail(f"the big workflow shows {shown} boxes and a summary of {more}")
    print("a 41-task workflow: 31 boxes and one summing up 10")
    graph_screenshot("6-workflow-batch.png")
