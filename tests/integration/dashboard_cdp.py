#!/usr/bin/env python3
"""tests/integration/dashboard_cdp.py: load the admin dashboard in headless
Chromium and check it, over the DevTools protocol (CDP) on
--remote-debugging-pipe: stdlib only, no npm, no websocket library.

    dashboard_cdp.py URL SHOT_DIR TRAFFIC_CMD MIN_HITS [PURGE_URL]

Loads URL at 1280x1500, waits for the page to show snapshots, reads the hit
counter (#hits), runs TRAFFIC_CMD (a shell command that makes MIN_HITS more
hits), waits for the counter to move by that much, saves SHOT_DIR/dashboard.png, then narrows the
window to 400 px (SHOT_DIR/dashboard-narrow.png); with PURGE_URL, purges it
with the page's form, accepting its confirmation dialog. Every JavaScript exception,
console.error and error log entry (a CSP violation is one) is collected.
Prints one "key=value" line per finding for the calling test to check; exit
status 0 unless the browser could not be driven at all. Every wait is a poll
with a generous bound (Chromium starts slowly on a loaded machine).
"""
import base64
import json
import os
import select
import subprocess
import sys
import tempfile
import time

CHROMIUM = os.environ.get("CT_CHROMIUM", "/usr/bin/chromium")
BOUND_S = float(os.environ.get("CT_CDP_BOUND_S", "60"))


class Cdp:
    """Messages on two pipes, each JSON object ended by a NUL byte."""

    def __init__(self, profile, log):
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def fds():  # chromium reads commands on fd 3 and writes on fd 4
            r, w = os.dup(to_r), os.dup(from_w)  # above 4, whatever the pipes got
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
             "--user-data-dir=" + profile, "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
            close_fds=False, preexec_fn=fds)
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            r, _, _ = select.select([self.from_r], [], [], left)
            if r:
                chunk = os.read(self.from_r, 1 << 20)
                if not chunk:
                    raise EOFError("chromium closed the pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, bound=BOUND_S):
        want = self.send(method, params, session)
        deadline = time.monotonic() + bound
        while True:
            msg = self._read(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def close(self):
        try:
            self.send("Browser.close")
        except OSError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def js_errors(events):
    out = []
    for e in events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("exception: %s %s" % (d.get("text", ""),
                                             d.get("exception", {}).get("description", "")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append("log: %s %s" % (p["entry"].get("text", ""), p["entry"].get("url", "")))
    return out


# Per canvas: its size and how many pixels are strongly coloured. The grid
# and the labels are grey, the series saturated colours, so a chart whose
# data was drawn has coloured pixels and an empty one has none.
CHARTS_JS = r"""
JSON.stringify(Array.prototype.map.call(document.querySelectorAll('canvas'), function (c) {
  var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = 0, ink = 0;
  for (var i = 0; i < d.length; i += 4) {
    if (d[i + 3] > 0) ink++;
    var mx = Math.max(d[i], d[i + 1], d[i + 2]), mn = Math.min(d[i], d[i + 1], d[i + 2]);
    if (d[i + 3] > 128 && mx - mn > 60) n++;
  }
  return {title: c.parentNode.querySelector('h2').textContent, w: c.width, h: c.height,
          ink: ink, colored: n};
}))
"""


def purge(cdp, sess, ev, poll, target):
    """Type TARGET into the purge form, press "Purge URL", accept the
    confirmation dialog like a user would; return what the page then says."""
    ev("document.getElementById('purge-url').value = %s" % json.dumps(target))
    click = cdp.send("Runtime.evaluate", {
        "expression": "document.querySelector('#purge button[data-kind=url]').click()"},
        session=sess)
    deadline = time.monotonic() + BOUND_S
    dialog = None
    while dialog is None:  # confirm() blocks the page until it is answered
        msg = cdp._read(deadline)
        if msg.get("method") == "Page.javascriptDialogOpening":
            dialog = msg["params"].get("message", "")
        elif "method" in msg:
            cdp.events.append(msg)
    cdp.call("Page.handleJavaScriptDialog", {"accept": True}, session=sess)
    while cdp._read(deadline).get("id") != click:
        pass
    said = poll("document.getElementById('purge-out').textContent",
                lambda v: v is not None and v.startswith(("purged", "error", "purge failed")))
    return "%s -> %s" % (dialog, said)


def main():
    url, shot_dir, traffic, min_hits = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    purge_url = sys.argv[5] if len(sys.argv) > 5 else None
    profile = tempfile.mkdtemp(prefix="ct-chromium.")
    log = open(os.path.join(shot_dir, "chromium.log"), "wb")
    cdp = Cdp(profile, log)
    out = {}
    charts = []
    try:
        target = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        sess = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for m in ("Runtime.enable", "Log.enable", "Page.enable"):
            cdp.call(m, session=sess)
        metrics = {"width": 1280, "height": 1500, "deviceScaleFactor": 1, "mobile": False}
        cdp.call("Emulation.setDeviceMetricsOverride", metrics, session=sess)
        cdp.call("Page.navigate", {"url": url}, session=sess)

        def ev(expr):
            r = cdp.call("Runtime.evaluate", {"expression": expr, "returnByValue": True},
                         session=sess)
            if "exceptionDetails" in r:
                return None
            return r.get("result", {}).get("value")

        def poll(expr, ok, bound=BOUND_S):
            deadline = time.monotonic() + bound
            while True:
                v = ev(expr)
                if ok(v) or time.monotonic() > deadline:
                    return v
                time.sleep(0.2)

        # cachet's history (GET /history) is drawn before any live snapshot
        hist = "window.cachetDashboard ? window.cachetDashboard.history : -1"
        out["history"] = poll(hist, lambda v: v is not None and v > 0)
        first = json.loads(ev(CHARTS_JS) or "[]")
        out["history_requests_colored"] = next(
            (c["colored"] for c in first if c["title"].startswith("Requests/s")), 0)
        upd = "window.cachetDashboard ? window.cachetDashboard.updates : -1"
        out["updates"] = poll(upd, lambda v: v is not None and v >= 3)
        out["title"] = ev("document.title")
        hits0 = ev("document.getElementById('hits').textContent")
        out["hits_before"] = hits0
        subprocess.run(traffic, shell=True, check=False, timeout=BOUND_S)
        hits1 = poll("document.getElementById('hits').textContent",
                     lambda v: v is not None and v.isdigit() and hits0 is not None and
                     hits0.isdigit() and int(v) >= int(hits0) + min_hits)
        out["hits_after"] = hits1
        # two more snapshots after the traffic, so its rates are on the charts
        n = ev(upd) or 0
        poll(upd, lambda v: v is not None and v >= n + 2)
        # the hits' origin time saved, beside the hit ratio
        out["saved"] = ev("document.getElementById('t-saved').textContent")
        charts = json.loads(ev(CHARTS_JS) or "[]")
        out["charts"] = len(charts)
        out["charts_sized"] = sum(1 for c in charts if c["w"] > 100 and c["h"] > 50 and c["ink"] > 0)
        out["charts_with_data"] = sum(1 for c in charts if c["colored"] > 0)
        out["requests_chart_colored"] = next(
            (c["colored"] for c in charts if c["title"].startswith("Requests/s")), 0)
        out["backend_rows"] = ev("document.querySelectorAll('#backends tbody tr').length")
        # every backend row's cells, "|"-joined, rows ";"-joined
        out["backend_cells"] = ev("Array.from(document.querySelectorAll('#backends tbody tr'))"
                                  ".map(function (tr) { return Array.from(tr.cells)"
                                  ".map(function (td) { return td.textContent; }).join('|'); })"
                                  ".join(';')")
        out["backend_health"] = ev("(document.querySelector('#backends tbody tr td:nth-child(2)')"
                                   " || {}).textContent")
        out["listener_rows"] = ev("document.querySelectorAll('#listeners tbody tr').length")
        out["listener_protos"] = ev("Array.prototype.map.call(document.querySelectorAll("
                                    "'#listeners tbody tr td:nth-child(2)'), function (td) {"
                                    " return td.textContent; }).join(' | ')")
        out["purge_shown"] = ev("!document.getElementById('purge-card').hidden")
        out["state"] = ev("document.getElementById('state').textContent")
        # the page, not the empty viewport below it
        tall = ev("Math.ceil(document.querySelector('main').getBoundingClientRect().bottom) + 8")
        tall = tall or metrics["height"]
        clip = {"x": 0, "y": 0, "width": metrics["width"], "height": min(tall, metrics["height"]),
                "scale": 1}
        png = cdp.call("Page.captureScreenshot", {"format": "png", "clip": clip},
                       session=sess)["data"]
        with open(os.path.join(shot_dir, "dashboard.png"), "wb") as f:
            f.write(base64.b64decode(png))
        # a narrow window: nothing wider than the viewport
        metrics.update(width=400, height=2600, mobile=True)
        cdp.call("Emulation.setDeviceMetricsOverride", metrics, session=sess)
        n = ev(upd) or 0
        poll(upd, lambda v: v is not None and v >= n + 1)
        out["narrow_overflow"] = ev("document.documentElement.scrollWidth - window.innerWidth")
        png = cdp.call("Page.captureScreenshot", {"format": "png"}, session=sess)["data"]
        with open(os.path.join(shot_dir, "dashboard-narrow.png"), "wb") as f:
            f.write(base64.b64decode(png))
        if purge_url:
            out["purge"] = purge(cdp, sess, ev, poll, purge_url)
        # events that arrived between calls
        cdp.call("Runtime.evaluate", {"expression": "1"}, session=sess)
    finally:
        errs = js_errors(cdp.events)
        cdp.close()
        subprocess.run(["rm", "-rf", profile], check=False)
    out["js_errors"] = len(errs)
    for k, v in out.items():
        print("%s=%s" % (k, v))
    for e in errs:
        print("js_error: " + e.replace("\n", " "))
    for c in charts:
        print("chart: %(title)s: %(w)dx%(h)d, %(ink)d pixels drawn, %(colored)d coloured" % c)


if __name__ == "__main__":
    main()
