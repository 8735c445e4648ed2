#!/usr/bin/env python3
"""Loads an HTML report in headless Chromium and checks what a reader would see.

  scripts/browser_check.py DIR/report.html [--screenshot shot.png] [--chromium PATH]

Drives Debian's `chromium` over the DevTools protocol on a pipe
(--remote-debugging-pipe; standard library only). Fails (exit 1) when an image
did not load or has a zero natural size, or when the page logged an error to
the console (console.error, an uncaught exception, a failed resource load).
Exit 2 when the page or chromium is missing (scripts/setup.sh installs it).
"""

import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# What the page is asked once it has loaded: every <img> with its load state.
IMAGES_JS = """JSON.stringify(Array.from(document.images).map(i => ({
  alt: i.alt, src: i.getAttribute('src').slice(0, 60), complete: i.complete,
  width: i.naturalWidth, height: i.naturalHeight})))"""

# Width of the page in the screenshot, CSS pixels.
SCREENSHOT_WIDTH = 1100


class BrowserError(Exception):
    """Chromium could not be started or stopped answering."""


class DevToolsPipe:
    """One headless Chromium and the DevTools protocol over fds 3 (in) and 4 (out)."""

    def __init__(self, chromium, timeout_s):
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="cohsim-chromium-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        for fd in (to_browser_r, from_browser_w):  # dup2 onto itself would keep close-on-exec
            os.set_inheritable(fd, True)

        def wire_fds():  # chromium reads commands on fd 3 and writes replies on fd 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.log_path = Path(self.profile) / "stderr.log"  # a file: a pipe nobody reads could fill
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                 "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
                 "--disable-dev-shm-usage",  # a container's small /dev/shm
                 "--user-data-dir=" + self.profile, "about:blank"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                preexec_fn=wire_fds, close_fds=False)  # close_fds would close 3 and 4 after wire_fds
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def close(self):
        try:
            self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.to_browser, self.from_browser):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer within %gs" % self.timeout_s)
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if ready:
                chunk = os.read(self.from_browser, 1 << 20)
                if not chunk:
                    err = self.log_path.read_text(errors="replace")[-2000:]
                    raise BrowserError("chromium exited (status %s): %s" % (self.proc.poll(), err))
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, session=None, **params):
        """Sends one command and returns its result; events seen meanwhile are kept."""
        self.next_id += 1
        command = {"id": self.next_id, "method": method, "params": params}
        if session:
            command["sessionId"] = session
        os.write(self.to_browser, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise BrowserError("%s: %s" % (method, message["error"].get("message")))
                return message.get("result", {})
            self.events.append(message)

    def wait_for_event(self, method):
        """Returns the first event named METHOD, kept or still to come."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            for event in self.events:
                if event.get("method") == method:
                    return event
            self.events.append(self._read_message(deadline))


def console_errors(events):
    """The console errors among the protocol events, one line each."""
    errors = []
    for e in events:
        method, p = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            errors.append("console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", []))))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            errors.append("uncaught: %s" % d.get("exception", {}).get("description", d.get("text")))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            entry = p["entry"]
            errors.append("%s: %s %s" % (entry.get("source"), entry.get("text"),
                                         entry.get("url", "")[:80]))
    return errors


def image_problems(images):
    """The images that did not load or have no size, one line each."""
    return ["image %d (%s, src %s...) did not load: complete=%s, natural size %dx%d"
            % (n, img["alt"] or "no alt", img["src"], img["complete"], img["width"], img["height"])
            for n, img in enumerate(images, 1)
            if not img["complete"] or img["width"] == 0 or img["height"] == 0]


def check_page(page, chromium, screenshot=None, timeout_s=30.0):
    """Loads PAGE; returns (images, problems). Writes a full-page PNG to SCREENSHOT."""
    browser = DevToolsPipe(chromium, timeout_s)
    try:
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            browser.send(domain + ".enable", session)
        browser.send("Emulation.setDeviceMetricsOverride", session, width=SCREENSHOT_WIDTH,
                     height=800, deviceScaleFactor=1, mobile=False)
        browser.send("Page.navigate", session, url=Path(page).resolve().as_uri())
        browser.wait_for_event("Page.loadEventFired")
        images = json.loads(browser.send("Runtime.evaluate", session, expression=IMAGES_JS,
                                         returnByValue=True)["result"]["value"])
        if screenshot:
            size = browser.send("Page.getLayoutMetrics", session)["cssContentSize"]
            shot = browser.send("Page.captureScreenshot", session, format="png",
                                captureBeyondViewport=True,
                                clip={"x": 0, "y": 0, "width": SCREENSHOT_WIDTH,
                                      "height": size["height"], "scale": 1})
            Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
            Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
        return images, image_problems(images) + console_errors(browser.events)
    finally:
        browser.close()


def find_chromium(given):
    """The chromium to run, or None."""
    for name in ([given] if given else ["chromium", "chromium-browser"]):
        path = shutil.which(name)
        if path:
            return path
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", help="the HTML file to load (e.g. DIR/report.html)")
    ap.add_argument("--screenshot", metavar="PNG", help="write a full-page screenshot here")
    ap.add_argument("--chromium", metavar="PATH", help="the browser (default: chromium on PATH)")
    ap.add_argument("--timeout", type=float, default=30.0, metavar="S",
                    help="seconds to wait for each answer from the browser (default 30)")
    args = ap.parse_args(argv)
    if not Path(args.page).is_file():
        print("browser_check: %s: no such file" % args.page, file=sys.stderr)
        return 2
    chromium = find_chromium(args.chromium)
    if not chromium:
        print("browser_check: chromium not found (%s): install Debian's chromium "
              "(scripts/setup.sh does)" % (args.chromium or "chromium on PATH"), file=sys.stderr)
        return 2
    try:
        images, problems = check_page(args.page, chromium, args.screenshot, args.timeout)
    except BrowserError as e:
        print("browser_check: %s" % e, file=sys.stderr)
        return 2
    for p in problems:
        print("browser_check: %s: %s" % (args.page, p), file=sys.stderr)
    print("%s: %d image(s) loaded, %d problem(s)%s"
          % (args.page, len(images) - len(image_problems(images)), len(problems),
             "; screenshot " + args.screenshot if args.screenshot else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
