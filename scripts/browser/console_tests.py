#!/usr/bin/env python3
"""Acceptance tests of the operator console (/console) in headless Chromium, driven over the DevTools protocol.

  CONSOLE_URL=http://127.0.0.1:18555 OPERATOR_A=cue_… OPERATOR_B=cue_… VIEWER=cue_… CHANNEL=c1 \
  AD_URI=http://127.0.0.1:18555/media/ad/ad.m3u8 CUELINE=path/to/cueline python3 scripts/browser/console_tests.py \
  --out .demo/console-screenshots        (CUELINE with DATABASE_URL: the CLI, to act as another door would)

Chromium runs with --remote-debugging-pipe: the protocol goes over two inherited pipes (fd 3 in, fd 4 out, one
JSON message per NUL), so no WebDriver, no Selenium and no WebSocket client is needed: Python's standard library
only. Each console is a page in a browser context of its own (its own session storage). Steps, each with a
screenshot in --out: sign in (the Enter key submits); place a break; a second console sees it within 1 s; the
break goes on air; the second console ends it early (typed confirmation) and the first sees that within 1 s; the
timeline shows the limit; the as-run row says ended-early; a stale If-Match (the second console's schedule reads
held back while the first places a break) shows the conflict and what changed; a focused break block keeps the
focus across re-renders and Enter opens its trail; a network loss (the second console goes through a relay the test
cuts) shows, and the console resumes with Last-Event-ID; an actor and a reason holding a right-to-left override and
other unseen characters (placed from the CLI, $CUELINE) are shown escaped as the CLI prints them, and a pod's assets
with their seconds; a viewer token sees no command controls; the viewer's page at tablet size does not overflow. Exit status 0 passed, 1 failed.
"""
import argparse, base64, json, os, re, shutil, subprocess, sys, tempfile, threading, time

FAILURES = []
STARTED = time.monotonic()


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + f"[{time.monotonic() - STARTED:5.1f} s] " + what, flush=True)
    if not condition:
        FAILURES.append(what)
    return condition


class Browser:
    """Chromium over --remote-debugging-pipe."""

    def __init__(self, chromium):
        self.profile = tempfile.mkdtemp(prefix="cueline-console-")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def wire():
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.stderr = open(os.path.join(self.profile, "chromium.stderr"), "w")
        self.process = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--mute-audio",
             "--autoplay-policy=no-user-gesture-required", "--remote-debugging-pipe", "--no-first-run",
             f"--user-data-dir={self.profile}", "--window-size=1280,720", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.stderr, close_fds=False, preexec_fn=wire)
        os.close(to_child_r)
        os.close(from_child_w)
        self.next_id = 0
        self.replies = {}
        self.events = []
        self.lock = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        buffer = b""
        while True:
            chunk = os.read(self.from_child, 1 << 16)
            if not chunk:
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                with self.lock:
                    if "id" in message:
                        self.replies[message["id"]] = message
                    else:
                        self.events.append(message)
                    self.lock.notify_all()

    def send(self, method, params=None, session=None, timeout=30):
        with self.lock:
            self.next_id += 1
            ident = self.next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self.lock:
            while ident not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{method}: no answer in {timeout} s")
                self.lock.wait(left)
            reply = self.replies.pop(ident)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def page(self, url, width=1280, height=720):
        context = self.send("Target.createBrowserContext")["browserContextId"]
        target = self.send("Target.createTarget", {"url": "about:blank", "browserContextId": context})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page.enable", "Runtime.enable"):
            self.send(domain, session=session)
        page.size(width, height)
        self.send("Page.navigate", {"url": url}, session=session)
        page.wait(f"document.readyState === 'complete' && location.href.startsWith({json.dumps(url)})", 15, f"{url} to load")
        return page

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        # The profile (a few MB) is the run's own: kept on a machine that runs the suite often, they add up. Kept when a
        # check failed, for Chromium's log in it.
        self.stderr.close()
        if FAILURES:
            print(f"Chromium's profile and log: {self.profile}", flush=True)
        else:
            shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser, session):
        self.browser = browser
        self.session = session

    def send(self, method, params=None):
        return self.browser.send(method, params, session=self.session)

    def size(self, width, height, mobile=False):
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    def js(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result["result"].get("value")

    def wait(self, expression, timeout=10, what=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.js(expression)
                if value:
                    return value
            except RuntimeError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout} s waiting for {what or expression}")

    def type(self, selector, text):
        self.js(f"document.querySelector({json.dumps(selector)}).focus()")
        self.send("Input.insertText", {"text": text})

    def key(self, key, code, keycode):
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": keycode,
                                                 **({"text": "\r"} if kind == "keyDown" and key == "Enter" else {})})

    def click(self, selector):
        self.js(f"document.querySelector({json.dumps(selector)}).click()")

    def shot(self, path, top=True, height=None):
        if top:  # the timeline in view, no focus ring left by typing
            self.js("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
            time.sleep(0.1)
        clip = {"clip": {"x": 0, "y": 0, "width": 1280, "height": height, "scale": 1}} if height else {}
        data = self.send("Page.captureScreenshot", {"format": "png", **clip})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        print(f"     screenshot {path}", flush=True)

    def exceptions(self):
        return [e["params"]["exceptionDetails"] for e in self.browser.events
                if e.get("sessionId") == self.session and e.get("method") == "Runtime.exceptionThrown"]


class Proxy:
    """A TCP relay to the server for the second console: `down()` cuts every connection and refuses new ones (a
    network loss), `up()` ends it; `hold()` keeps connections open but lets nothing from the server through (a link
    gone silent), `release()` ends that. It keeps the head of each request it relays (to see what a reconnect sent)."""

    def __init__(self, target_host, target_port):
        import socket
        self.socket = socket
        self.target = (target_host, target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open = True
        self.held = False
        self.connections = []
        self.heads = []
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            client, _ = self.listener.accept()
            if not self.open:
                client.close()
                continue
            try:
                server = self.socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.connections += [client, server]
            threading.Thread(target=self.pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self.pipe, args=(server, client, False), daemon=True).start()

    def pipe(self, source, sink, request):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if request and data[:4] in (b"GET ", b"POST", b"HEAD"):  # a request's head (keep-alive: not only the first)
                    with self.lock:
                        self.heads.append(data.split(b"\r\n\r\n", 1)[0].decode("latin-1"))
                while self.held and not request:
                    time.sleep(0.05)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(self.socket.SHUT_RDWR)
                except OSError:
                    pass

    def down(self):
        self.open = False
        with self.lock:
            connections, self.connections = self.connections, []
        for s in connections:
            try:
                s.shutdown(self.socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def up(self):
        self.open = True

    def hold(self):
        self.held = True

    def release(self):
        self.held = False


def block(channel_break, state=None):
    selector = f'#timeline .brk[data-break-id="{channel_break}"]'
    if state:
        selector += f'[data-state="{state}"]'
    return f"!!document.querySelector({json.dumps(selector)})"


def sign_in(page, token, channel):
    page.wait("!document.getElementById('sign-in').hidden", 15, "the sign-in form")
    page.type("#token", token)
    page.key("Enter", "Enter", 13)  # the keyboard submits the form
    page.wait(f"!!document.querySelector('#channel-rows tr[data-channel=\"{channel}\"]')", 10, "the overview row")


def open_channel(page, channel):
    page.click(f'#channel-rows a[href="#/channel/{channel}"]')
    page.wait("!!document.querySelector('#timeline .edge') && document.getElementById('link-state').dataset.state === 'live'",
              10, "the timeline and a live event stream")


def delivered(actor, watcher, key, timeout=10):
    """Seconds from the acting console's acknowledged command to the watching console holding it: its event stream
    delivered the version the command made and it shows `key` (a break id and state). Both pages' clocks are this
    machine's wall clock (performance.timeOrigin + performance.now()). A watcher that saw the change only by
    polling never has the version from its stream, so this fails when the event stream does not work."""
    acked = actor.js("window.__cueline.acked")
    if not acked:
        raise AssertionError("the acting console recorded no acknowledged command")
    version, shown = json.dumps(acked["version"]), json.dumps(key)
    at = watcher.wait(f"(p => p.streamed[{version}] && p.shown[{shown}] && Math.max(p.streamed[{version}], p.shown[{shown}]))(window.__cueline)",
                      timeout, f"the other console's event stream delivering version {acked['version']} and showing {key}")
    return (at - acked["at"]) / 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    a = ap.parse_args()
    env = os.environ
    url, channel, ad = env["CONSOLE_URL"], env["CHANNEL"], env["AD_URI"]
    os.makedirs(a.out, exist_ok=True)
    shot = lambda page, name: page.shot(os.path.join(a.out, name))
    summary = {"steps": []}
    run = f"{int(time.time()) % 100000:05d}"  # break ids of this run: a rerun on the same channel places new ones
    b1, b2, b3 = f"brk-{run}-1", f"brk-{run}-2", f"brk-{run}-3"
    browser = Browser(a.chromium)
    try:
        # 1. Sign in, overview, channel.
        first = browser.page(f"{url}/console")
        shot(first, "01-sign-in.png")
        sign_in(first, env["OPERATOR_A"], channel)
        check(first.js("sessionStorage.getItem('cueline.token') !== null && !location.href.includes('cue_')"),
              "the token is in session storage and not in the URL")
        row = first.wait(f"(r => r && r.dataset.health === 'healthy' && r.textContent)(document.querySelector('#channel-rows tr[data-channel=\"{channel}\"]'))",
                         10, "a healthy overview row")
        check(row.startswith(f"{channel}clock"), f"the overview row shows the channel as a healthy clock channel ({row!r})")
        shot(first, "02-overview.png")
        open_channel(first, channel)
        # Switching away and back while the channel is still loading (each switch before any answer arrives) leaves
        # one event stream open, not one per switch.
        first.js("(async () => { const tick = () => new Promise((r) => setTimeout(r, 0));"
                 f" for (const hash of ['#/', '#/channel/{channel}', '#/', '#/channel/{channel}']) {{ location.hash = hash; await tick(); }} }})()")
        first.wait("!!document.querySelector('#timeline .edge') && document.getElementById('link-state').dataset.state === 'live'",
                   10, "the channel again after quick switches")
        time.sleep(1.5)
        streams = first.js("window.__cueline.openStreams")
        check(streams == 1, f"quick switches away and back leave one event stream open ({streams})")
        # The player runs in a sandboxed frame: another origin to the console, so it cannot read the token.
        check(first.js("(() => { try { return document.getElementById('player-frame').contentWindow.sessionStorage ? 'readable' : 'none'; }"
                       " catch (e) { return 'blocked'; } })()") == "blocked", "the player's frame cannot reach the console's session storage")
        if env.get("CUELINE_HLSJS"):
            played = first.wait("(t => /^(Program|Interstitial)/.test(t) && t)(document.getElementById('player-state').textContent)",
                                20, "the player playing the channel")
            check(True, f"hls.js plays the channel in the sandboxed frame ({played!r})")
        first.click("#zoom-in")
        first.click("#zoom-in")
        check(first.js("document.getElementById('zoom-label').textContent.includes('40 s')"), "the timeline zooms in")
        host, port = url.split("//", 1)[1].rsplit(":", 1)
        proxy = Proxy(host, int(port))
        second = browser.page(f"http://127.0.0.1:{proxy.port}/console")  # through a relay the test can cut
        sign_in(second, env["OPERATOR_B"], channel)
        open_channel(second, channel)
        second.click("#zoom-in")
        second.click("#zoom-in")
        check(first.js("!!document.getElementById('commands')"), "an operator sees the command controls")

        # 2. Place a break; the other console sees it within 1 s.
        first.type("#place-in", "")  # focus
        first.js("document.getElementById('place-in').value = '4'")
        first.type("#place-asset", ad)
        first.type("#place-id", b1)
        first.click("#place-submit")
        first.wait("['ok', 'error', 'conflict'].includes(document.getElementById('command-result').dataset.kind)", 10, "the answer")
        check(first.js("document.getElementById('command-result').dataset.kind") == "ok",
              "the place command succeeded: " + first.js("document.getElementById('command-result').textContent"))
        lag = delivered(first, second, f"{b1}:scheduled")
        summary["steps"].append({"step": "place seen by the second console", "seconds": round(lag, 3)})
        check(lag <= 1.0, f"the second console shows the placed break {lag:.3f} s after the first's command was acknowledged, from its event stream (at most 1 s)")
        shot(first, "03-placed.png")
        shot(second, "04-second-console.png")

        # 3. It goes on air (the live edge passes its start).
        first.wait(block(b1, "on-air"), 20, "brk-1 on air")
        check(True, "the break goes on air on the timeline")
        first.wait("!!document.querySelector('#timeline .brk[data-break-id=\"" + b1 + "\"] .progress')", 5, "its progress bar")
        time.sleep(3)
        shot(first, "05-on-air.png")

        # 4. The second console ends it early: the button stays disabled until END is typed.
        check(second.js("document.getElementById('end-now').disabled"), "End break now is disabled before the confirmation")
        second.type("#end-confirm", "END")
        check(not second.js("document.getElementById('end-now').disabled"), "typing END enables End break now")
        second.click("#end-now")
        second.wait("['ok', 'error', 'conflict'].includes(document.getElementById('command-result').dataset.kind)", 10, "the end's answer")
        lag = delivered(second, first, f"{b1}:ended-early")
        summary["steps"].append({"step": "end early seen by the first console", "seconds": round(lag, 3)})
        check(lag <= 1.0, f"the first console shows the early end {lag:.3f} s after the second's command was acknowledged, from its event stream (at most 1 s)")
        limit = first.wait("(document.querySelector('#timeline .limit[data-break-id=\"" + b1 + "\"]') || {}).textContent", 5, "the limit")
        check(limit.startswith("limit "), f"the timeline shows the limit ({limit!r})")
        time.sleep(1)
        shot(first, "06-ended-early.png")
        first.shot(os.path.join(a.out, "06-ended-early-timeline.png"), height=330)  # the README's picture

        # 5. The as-run row.
        row = first.wait("(() => { const r = document.querySelector('#asrun-rows tr[data-break-id=\"" + b1 + "\"]');"
                         " return r && r.dataset.status === 'ended-early' && r.textContent; })()", 10, "the as-run row")
        check("ended-early" in row and "desk-b" in row, f"the as-run row says ended-early by the second operator ({row!r})")
        first.js("document.getElementById('asrun-title').scrollIntoView()")
        first.shot(os.path.join(a.out, "07-as-run.png"), top=False)

        # 6. A stale If-Match: the second console's schedule reads are held, so it still shows the old version while
        # the first places a break; its next command is refused with 409 and the console says what changed.
        second.send("Fetch.enable", {"patterns": [{"urlPattern": f"*/channels/{channel}/schedule*", "requestStage": "Request"}]})
        old = second.js("Number(document.getElementById('channel-facts').dataset.version)")
        first.js("document.getElementById('place-in').value = '60'")
        first.type("#place-id", b2)
        first.click("#place-submit")
        first.wait(block(b2), 10, "brk-2 on the first console")
        time.sleep(0.3)
        check(second.js("Number(document.getElementById('channel-facts').dataset.version)") == old,
              "the second console still shows the version it was looking at")
        second.js("document.getElementById('place-in').value = '90'")
        second.type("#place-asset", ad)
        second.type("#place-id", b3)
        second.click("#place-submit")
        text = second.wait("(() => { const r = document.getElementById('command-result');"
                           " return r.dataset.kind === 'conflict' && r.querySelector('.changes li') && r.textContent; })()",
                           10, "the conflict")
        check("changed meanwhile" in text and b2 in text, f"the conflict says what changed ({text[:160]!r})")
        shot(second, "08-conflict.png")
        for event in list(browser.events):
            if event.get("sessionId") == second.session and event.get("method") == "Fetch.requestPaused":
                try:
                    second.send("Fetch.continueRequest", {"requestId": event["params"]["requestId"]})
                except RuntimeError:
                    pass
        second.send("Fetch.disable")
        second.wait(block(b2), 10, "the fresh timeline on the second console")
        check(not second.js(block(b3)) and not first.js(block(b3)), "the refused break was not placed")

        # 7. A refused attempt: the 409 of a stale If-Match is not a decision of the schedule (nothing was decided
        # on the version the operator saw) and is not recorded as a refusal; cancelling a break that already ended is
        # refused by the schedule and recorded. The first console's cancel list still offers brk-1 (as a list read
        # before it ended would): the answer is an error, and brk-1's trail shows the refused attempt.
        first.js(f"(() => {{ const s = document.getElementById('cancel-break'); const o = document.createElement('option');"
                 f" o.value = o.textContent = {json.dumps(b1)}; s.append(o); s.value = {json.dumps(b1)}; }})()")
        first.js("document.getElementById('command-result').dataset.kind = ''")
        first.click('#cancel-form button[type="submit"]')
        first.wait("['ok', 'error', 'conflict'].includes(document.getElementById('command-result').dataset.kind)", 10, "the cancel's answer")
        check(first.js("document.getElementById('command-result').dataset.kind") == "error",
              "cancelling the ended break is refused: " + first.js("document.getElementById('command-result').textContent"))

        # 8. Keyboard: a focused block keeps the focus while the timeline re-renders, and Enter opens its details.
        first.js(f"document.querySelector('#timeline .brk[data-break-id=\"{b1}\"]').focus()")
        time.sleep(2.5)  # at least one re-render (once a segment)
        check(first.js("document.activeElement.dataset.breakId") == b1, "a focused break block keeps the focus across re-renders")
        first.key("Enter", "Enter", 13)
        trail = first.wait("(() => { const d = document.getElementById('break-detail');"
                           " return !d.hidden && d.querySelectorAll('.trail li').length >= 2 && d.textContent; })()", 10, "the break's details")
        check("BreakPlaced" in trail and "by console-desk-b" in trail, "Enter on a block opens its as-run and log trail")
        refused = first.wait("(() => { const l = document.querySelector('#break-detail .refusals');"
                             " return l && l.textContent.includes('refused:') && l.textContent; })()", 10, "the refused attempts")
        check("cancel-break by console-desk-a via http refused:" in refused,
              f"the break's trail lists the refused cancel: who, when, which door, why ({refused[:200]!r})")
        page = first.js(f"import('/console/api.js').then((api) => api.getJSON('/channels/{channel}/refusals?limit=1000'))")
        commands = [(r["command"], r.get("break_id")) for r in page["refusals"]]
        check(("cancel-break", b1) in commands and not any(b == b3 for _, b in commands),
              f"the channel's refusals hold the cancel and not the stale If-Match's place (a 409 decides nothing) ({commands})")
        first.shot(os.path.join(a.out, "09-detail.png"), top=False)

        # 8b. A lost answer: the place reaches the server but its answer is failed in the browser (after the server
        # applied it). The console says the outcome is unknown; the same click again sends the same Idempotency-Key and
        # If-Match, and the server answers with the original result: one break, one new version.
        b5 = f"brk-{run}-5"
        schedule = f"import('/console/api.js').then((api) => api.getJSON('/channels/{channel}/schedule'))"
        before = first.js(schedule)["version"]
        first.send("Fetch.enable", {"patterns": [{"urlPattern": f"*/channels/{channel}/commands*", "requestStage": "Response"}]})
        first.js("document.getElementById('place-in').value = '200'")
        first.js("document.getElementById('place-id').value = ''")
        first.type("#place-id", b5)
        first.js("document.getElementById('command-result').dataset.kind = ''")
        # As over plain http from another machine (not a secure context): no crypto.randomUUID.
        first.js("Object.defineProperty(crypto, 'randomUUID', { value: undefined, configurable: true })")
        first.click("#place-submit")
        deadline = time.monotonic() + 10
        paused = None
        while paused is None and time.monotonic() < deadline:
            paused = next((e for e in list(browser.events) if e.get("sessionId") == first.session
                           and e.get("method") == "Fetch.requestPaused" and "/commands" in e["params"]["request"]["url"]), None)
            time.sleep(0.02)
        check(paused is not None and paused["params"].get("responseStatusCode") == 201,
              "the place reached the server, which applied it (201), before its answer is lost")
        key = {k.lower(): v for k, v in paused["params"]["request"]["headers"].items()}.get("idempotency-key", "")
        check(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", key) is not None,
              f"without crypto.randomUUID (plain http) the console still sends a random UUID as Idempotency-Key ({key!r})")
        first.send("Fetch.failRequest", {"requestId": paused["params"]["requestId"], "errorReason": "ConnectionReset"})
        first.send("Fetch.disable")
        lost = first.wait("(r => r.dataset.outcome === 'unknown' && r.textContent)(document.getElementById('command-result'))",
                          10, "the unknown outcome")
        check("applied at most once" in lost, f"the console says the outcome is unknown and a resend is safe ({lost[:120]!r})")
        first.wait(f"!!window.__cueline.shown[{json.dumps(b5 + ':scheduled')}]", 10, "the placed break in the schedule, from the event stream")
        first.click("#place-submit")
        again = first.wait("(r => r.dataset.kind === 'ok' && r.dataset.outcome && r.textContent)(document.getElementById('command-result'))",
                           10, "the resend's answer")
        check(first.js("document.getElementById('command-result').dataset.outcome") == "replayed" and "Already done by the earlier attempt" in again,
              f"the resend gets the original result, not a second break or a refusal ({again[:160]!r})")
        now = first.js(schedule)
        check(now["version"] == before + 1 and sum(1 for b in now["breaks"] if b["id"] == b5) == 1,
              f"one break and one new version (v{before} → v{now['version']})")
        shot(first, "09b-resend.png")

        # 9. A network loss: the second console says so, reconnects with Last-Event-ID and catches up.
        first.click("#zoom-out")  # −3 … +7 min: the next break is 150 s ahead
        second.click("#zoom-out")
        proxy.down()
        state = second.wait("(s => ['reconnecting', 'stale'].includes(s) && s)(document.getElementById('link-state').dataset.state)",
                            20, "the second console noticing the loss")
        check(True, f"the second console shows the loss ({state})")
        shot(second, "10-offline.png")
        b4 = f"brk-{run}-4"
        first.js("document.getElementById('place-in').value = '150'")
        first.type("#place-id", b4)
        first.js("document.getElementById('command-result').dataset.kind = ''")
        first.click("#place-submit")
        first.wait("['ok', 'error', 'conflict'].includes(document.getElementById('command-result').dataset.kind)", 10, "the answer")
        check(first.js("document.getElementById('command-result').dataset.kind") == "ok",
              "the first console places a break meanwhile: " + first.js("document.getElementById('command-result').textContent"))
        first.wait(block(b4), 10, "brk-4 on the first console")
        time.sleep(1)
        check(not second.js(block(b4)), "while the link is down the second console does not have the new break")
        mark = len(proxy.heads)
        proxy.up()
        second.wait(block(b4) + " && document.getElementById('link-state').dataset.state === 'live'", 15, "the catch-up after the loss")
        ids = [line.split(":", 1)[1].strip() for head in proxy.heads[mark:]
               if head.startswith(f"GET /channels/{channel}/events ") for line in head.split("\r\n")
               if line.lower().startswith("last-event-id:")]
        check(any(i.isdigit() and int(i) >= 4 for i in ids), f"the second console reconnected with Last-Event-ID ({ids})")
        check("cue_" not in "".join(h.split("\r\n", 1)[0] for h in proxy.heads), "no request line carries the token")

        # 10. A link gone silent: the relay holds the server's bytes (no events, no keep-alives) with the connection
        # open; after 15 s the header says stale, and once bytes flow again it says live.
        second.js("window.linkStates = []; new MutationObserver(() => window.linkStates.push("
                  "[document.getElementById('link-state').dataset.state, document.getElementById('link-state').textContent]))"
                  ".observe(document.getElementById('link-state'), { attributes: true, childList: true, subtree: true })")
        held = time.monotonic()
        proxy.hold()
        second.wait("document.getElementById('link-state').dataset.state === 'stale'", 25, "the stale header")
        silent = time.monotonic() - held
        header = second.js("document.getElementById('link-state').textContent")
        check(14 <= silent <= 20 and "stale" in header, f"the header says stale after {silent:.1f} s without news ({header!r})")
        time.sleep(2)
        check(second.js("document.getElementById('link-state').dataset.state") == "stale", "it stays stale while the link is silent")
        shot(second, "11-stale.png")
        proxy.release()
        second.wait("document.getElementById('link-state').dataset.state === 'live'", 15, "live again after the silence")
        states = [s for s, _ in second.js("window.linkStates")]
        check("stale" in states and states[-1] == "live" and "reconnecting" not in states[states.index("stale"):],
              f"the header goes stale, stays stale while it reconnects, then live again ({states})")

        # 10b. Text the log holds but a page must not show raw (issue 34): a break placed from the CLI by an actor, and
        # with a reason, holding a right-to-left override, isolates, a zero-width space, a line separator and a BOM (the
        # CLI escapes them), then cancelled by that actor and cancelled again (refused). Everywhere the console shows
        # them (hover fields, as-run, trail, refused attempts) they read as the CLI prints them, `\u{202E}`; nothing
        # on the page holds one raw. Its pod of two 6 s assets shows each asset's seconds (the schedule sends
        # `duration_milliseconds`), not "(undefined s)".
        b6 = f"brk-{run}-6"
        actor, reason = "ops\u202eevil\u2066x\u2069", "why\u202etxet\u200b\u2028\ufeff end"
        shown_actor, shown_reason = r"ops\u{202E}evil\u{2066}x\u{2069}", r"why\u{202E}txet\u{200B}\u{2028}\u{FEFF} end"
        pods = [ad.rsplit("/", 1)[0] + f"/pod{i}.m3u8" for i in (1, 2)]

        def cli(*arguments, ok=True):
            done = subprocess.run([env["CUELINE"], *arguments], capture_output=True, text=True, timeout=30)
            check(done.returncode == 0 if ok else done.returncode != 0,
                  f"cueline {arguments[0]} {arguments[1]} {'applied' if ok else 'refused'} ({(done.stdout + done.stderr).strip()[:160]!r})")

        cli("break", "place", channel, "--in", "300", "--duration", "12", "--pod", f"{pods[0]},6", "--pod", f"{pods[1]},6",
            "--id", b6, "--actor", actor, "--reason", reason)
        first.wait(block(b6), 10, "the CLI's pod break on the first console")
        fields = first.js(f"document.querySelector('#timeline .brk[data-break-id=\"{b6}\"]').title")
        pod_line = next((line for line in fields.split("\n") if line.startswith("pod: ")), "")
        check(pod_line == f"pod: {pods[0]} (6.000 s), {pods[1]} (6.000 s)" and "undefined" not in fields,
              f"the pod break's fields show each asset's seconds ({pod_line!r})")
        check(f"placed by {shown_actor} via cli" in fields, f"the hover fields show the actor escaped ({fields.splitlines()[-1]!r})")
        cli("break", "cancel", channel, b6, "--actor", actor, "--reason", reason)
        cli("break", "cancel", channel, b6, "--actor", actor, "--reason", reason, ok=False)
        first.wait(block(b6, "cancelled"), 10, "the cancelled break on the first console")
        first.click(f'#timeline .brk[data-break-id="{b6}"]')
        trail = first.wait("(() => { const d = document.getElementById('break-detail');"
                           f" return !d.hidden && d.querySelector('h3').textContent === 'Break {b6}'"
                           " && d.querySelectorAll('.trail:not(.refusals) li').length >= 2"
                           " && d.querySelector('.refusals').textContent.includes('refused:') && d.textContent; })()",
                           10, "the hostile break's trail and refused attempts")
        lines = first.js("[...document.querySelectorAll('#break-detail li')].map((li) => li.textContent)")
        check(any(f"BreakPlaced by {shown_actor} via cli, reason: {shown_reason}" in line for line in lines),
              f"the trail shows the actor and the reason escaped ({[l for l in lines if 'BreakPlaced' in l][:1]!r})")
        check(any(f"by {shown_actor} via cli refused:" in line for line in lines),
              f"the refused attempt shows its actor escaped ({[l for l in lines if 'refused:' in l][:1]!r})")
        check(f"cancelled by {shown_actor} at " in first.js("document.querySelector('#break-detail pre').textContent"),
              "the detail's fields show who cancelled, escaped")
        row = first.wait(f"(r => r && r.textContent)(document.querySelector('#asrun-rows tr[data-break-id=\"{b6}\"]'))", 10, "the as-run row")
        check(f"{shown_actor} (cli)" in row, f"the as-run row shows the actor escaped ({row!r})")
        # Nothing on the page (text, hover and accessible names, document title) holds one of these characters raw.
        raw = first.js(r"""(() => {
            // Not TAB, LF and CR: the page's own markup and the hover fields' line breaks hold them.
            const unseen = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u200B-\u200F\u2028-\u202E\u2066-\u2069\uFEFF]/;
            const found = [];
            const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            for (let n = walker.nextNode(); n; n = walker.nextNode()) if (unseen.test(n.data)) found.push(n.data);
            for (const e of document.querySelectorAll('*')) {
              for (const a of ['title', 'aria-label', 'placeholder', 'label']) {
                const v = e.getAttribute(a);
                if (v !== null && unseen.test(v)) found.push(`${a}: ${v}`);
              }
            }
            if (unseen.test(document.title)) found.push(document.title);
            return found.slice(0, 5);
          })()""")
        check(not raw, f"no text on the page holds a control, bidi or invisible character raw ({raw!r})")
        # What cannot be stored (C0 and C1 controls) is written the same way by the one helper every text goes through.
        helper = first.js(r"import('/console/text.js').then((t) => t.printable('a\u001b[31mb\u0085c\u007f\u202ed\u00e9'), (e) => String(e))")
        check(helper == r"a\u{1B}[31mb\u{85}c\u{7F}\u{202E}dé", f"printable() writes C0, DEL, C1 and bidi controls as \\u{{…}} ({helper!r})")
        first.shot(os.path.join(a.out, "11b-hostile-text.png"), top=False)

        # 11. A viewer sees no controls; at tablet size nothing overflows.
        viewer = browser.page(f"{url}/console")
        sign_in(viewer, env["VIEWER"], channel)
        open_channel(viewer, channel)
        check(viewer.js("document.getElementById('commands') === null && !document.getElementById('end-now')"
                        " && !document.getElementById('place-form')"), "a viewer token gets no command controls")
        check(viewer.js("!document.getElementById('viewer-note').hidden"), "the viewer is told the schedule is read-only")
        check(viewer.js(block(b2)), "the viewer sees the timeline")
        shot(viewer, "12-viewer.png")
        viewer.size(820, 1180, mobile=True)
        time.sleep(0.5)
        viewer.js("window.dispatchEvent(new Event('resize'))")
        check(viewer.js("document.documentElement.scrollWidth <= window.innerWidth + 1"), "tablet size: no horizontal overflow")
        shot(viewer, "13-tablet.png")

        for name, page in (("first", first), ("second", second), ("viewer", viewer)):
            errors = page.exceptions()
            check(not errors, f"no uncaught script errors on the {name} console ({errors[:1]})")
        summary["player"] = first.js("document.getElementById('player-state').textContent")
    except Exception as error:
        # Any failure is one (a browser pipe that broke, an answer that did not parse…): recorded, and the profile kept.
        check(False, f"{type(error).__name__}: {error}")
    finally:
        browser.close()
    summary["failures"] = FAILURES
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(("FAILED: " + "; ".join(FAILURES)) if FAILURES else "console tests passed", flush=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
