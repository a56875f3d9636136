# SPDX-License-Identifier: BSD-3-Clause
"""A headless Chromium through chromedriver, spoken to in W3C WebDriver over
HTTP (no client library): for tests/scripts/dashboard_browser.py and
bench/dashboard_load.py."""
import base64
import json
import random
import subprocess
import sys
import time
import urllib.error
import urllib.request


def http(method, url, body=None):
    """Sends JSON, returns the JSON answer (also of an HTTP error)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


def wait_until(what, check, timeout=30.0, every=0.1):
    """Polls check() until it returns a true value; exits after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            sys.exit(f"FAIL: timed out waiting for {what}")
        time.sleep(every)


class browser:
    """chromedriver on a port below the ephemeral range (tried until one
    binds) and one headless Chromium session; use in a with statement."""

    def __enter__(self):
        for _ in range(8):
            port = random.randint(20000, 32000)
            self.driver = subprocess.Popen(
                ["chromedriver", f"--port={port}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.wd = f"http://127.0.0.1:{port}"
            if wait_until("chromedriver", self._ready, 15) is True:
                break
            self.driver.wait()
        else:
            sys.exit("FAIL: chromedriver did not start on any of 8 ports")
        answer = http("POST", self.wd + "/session", {"capabilities": {
            "alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage",
                         "--window-size=1400,1000"]}}}})
        self.sid = answer["value"].get("sessionId")
        if not self.sid:
            self.__exit__()
            sys.exit(f"FAIL: no WebDriver session: {answer}")
        self.s = f"{self.wd}/session/{self.sid}"
        return self

    def __exit__(self, *args):
        if getattr(self, "sid", None):
            http("DELETE", self.s)
        self.driver.terminate()
        self.driver.wait()

    def _ready(self):
        if self.driver.poll() is not None:
            return "exited"
        try:
            return http("GET", self.wd + "/status")["value"]["ready"]
        except OSError:
            return False

    def resize(self, width, height):
        http("POST", self.s + "/window/rect", {"width": width, "height": height})

    def go(self, url):
        http("POST", self.s + "/url", {"url": url})

    def js(self, script, *args):
        return http("POST", self.s + "/execute/sync",
                    {"script": script, "args": list(args)})["value"]

    def screenshot(self, path):
        png = base64.b64decode(http("GET", self.s + "/screenshot")["value"])
        with open(path, "wb") as f:
            f.write(png)
        return len(png)

    def click(self, selector):
        """A real click on the element; found again when the page redrew it
        (stale element) or has not drawn it yet."""
        def attempt():
            found = http("POST", self.s + "/element",
                         {"using": "css selector", "value": selector})["value"]
            if not isinstance(found, dict) or "error" in found or not found:
                return False
            ref = next(iter(found.values()))
            return http("POST", f"{self.s}/element/{ref}/click",
                        {})["value"] is None
        wait_until(f"a click on {selector}", attempt)
