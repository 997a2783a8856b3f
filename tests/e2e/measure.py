#!/usr/bin/env python3
"""Measures the desktop app as a person would feel it, and prints medians of several runs:

- start:  cold start to an interactive window. From the app's process start (its start time in
          /proc) until the page has rendered the window (`load` has ended and a frame is drawn),
          read from the page's own clock; and, as an upper bound, from asking WebDriver for a
          session (which launches WebKitWebDriver and the app) until the heading is found.
- memory: idle memory of all the app's processes (the app, WebKit's web and network
          processes): PSS (shared pages split between processes) and RSS from /proc, 5 s after
          the window is up, with the app started directly, not under WebDriver.
- stop:   from a click on Stop, mid-stream, until the window shows "Stopped." (page clock).
- token:  from a text chunk arriving from the network (a proxy between the app and the
          stand-in stamps each read) until its text is drawn in the window.
- aside:  issue 38: each step of a run in auto mode on a GTK app, in the window (which steps
          aside for every action that touches the screen and comes back) and the same steps
          through `deskhand ask` on the same display: each step's own time (`duration_ms` of
          its tool result), medians, for computer clicks and `ui` clicks by name; and the
          window's own time to step aside per step, as it writes it (DESKHAND_ASIDE_LOG).
- scroll: a 500-message session with 100 screenshots (one run of 250 turns, auto mode):
          frame times while the conversation and the side panel are scrolled from top to
          bottom, while the session is reopened from the sidebar (and how long until every
          screenshot shows), and scrolling again after that.

Usage: scripts/measure.sh [--runs N] [--only start,memory,...]   (starts a display itself)
   or: tests/e2e/measure.py APP STANDIN [--runs N] [--only ...]   (needs DISPLAY, as app_e2e.py)
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import App, app_env, process_tree, start_standin, text_reply  # noqa: E402

SETTINGS = {"provider": "anthropic", "model": "claude-sonnet-4-5", "approval_mode": "ask",
            "max_turns": 1000, "monitor": None,
            "screenshot_size": {"width": 1280, "height": 800}}


def median(values):
    return statistics.median(values)


def fmt(values, unit, digits=0):
    return (f"median {median(values):.{digits}f} {unit} "
            f"(min {min(values):.{digits}f}, max {max(values):.{digits}f}, n={len(values)})")


# --- processes -----------------------------------------------------------------------------

def memory(pids):
    """{name: (pss_kb, rss_kb)} per process."""
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as f:
                name = f"{f.read().strip()}[{pid}]"
            pss = rss = 0
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss = int(line.split()[1])
                    elif line.startswith("Rss:"):
                        rss = int(line.split()[1])
            out[name] = (pss, rss)
        except OSError:
            pass
    return out


def process_age(pid):
    """Seconds since `pid` started (10 ms resolution)."""
    with open(f"/proc/{pid}/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


# --- the measurements ----------------------------------------------------------------------

# The wall-clock time (ms since the epoch) at which the page had loaded and painted: the later
# of the end of `load` and the first contentful paint, when the engine reports one.
PAGE_READY = """
const done = arguments[arguments.length - 1];
const report = () => requestAnimationFrame(() => setTimeout(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const paint = performance.getEntriesByType('paint').map((p) => p.startTime);
  done(performance.timeOrigin + Math.max(nav.loadEventEnd, ...paint));
}));
if (document.readyState === 'complete') report(); else addEventListener('load', report);
"""


def newest_app_pid(binary):
    """The app process started last (the one before may still be closing)."""
    real = os.path.realpath(binary)
    pids = [p for p in process_tree(binary) if os.path.realpath(f"/proc/{p}/exe") == real]
    if not pids:
        raise AssertionError(f"no {binary} process")
    return min(pids, key=process_age)


def measure_start(args, work):
    windows, sessions = [], []
    for i in range(args.runs):
        run_dir = os.path.join(work, f"start{i}")
        os.makedirs(run_dir)
        asked = time.monotonic()
        app = App(args.app, args.standin, {"turns": []}, run_dir)
        try:
            app.session.wait_for("h1", text="Deskhand", what="the window", timeout=30)
            sessions.append((time.monotonic() - asked) * 1000)
            ready = app.session.execute_async(PAGE_READY) / 1000
            started = time.time() - process_age(newest_app_pid(args.app))
            windows.append((ready - started) * 1000)
        finally:
            app.close()
    print(f"cold start, process start to the window loaded and painted: {fmt(windows, 'ms')}")
    print(f"cold start, WebDriver session asked to the heading found (upper bound): "
          f"{fmt(sessions, 'ms')}")


def wait_window(name, timeout=30):
    """Waits until a visible X window's title matches `name`."""
    deadline = time.monotonic() + timeout
    while subprocess.run(["xdotool", "search", "--onlyvisible", "--name", name],
                         capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"no window {name!r} after {timeout} s")
        time.sleep(0.05)


def measure_memory(args, work):
    totals, breakdowns = [], []
    for i in range(args.runs):
        run_dir = os.path.join(work, f"memory{i}")
        os.makedirs(run_dir)
        app = subprocess.Popen([args.app], env=app_env(run_dir, "http://127.0.0.1:9"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_window("^Deskhand$")
            time.sleep(args.idle)
            used = memory(process_tree(args.app))
        finally:
            app.terminate()
            app.wait()
        totals.append((sum(p for p, _ in used.values()) / 1024,
                       sum(r for _, r in used.values()) / 1024))
        breakdowns.append(used)
    middle = sorted(range(len(totals)), key=lambda i: totals[i][0])[len(totals) // 2]
    print(f"idle memory ({args.idle:.0f} s after the window is up), all processes: "
          f"PSS {fmt([t[0] for t in totals], 'MB')}; RSS median {median([t[1] for t in totals]):.0f} MB")
    for name, (pss, rss) in sorted(breakdowns[middle].items(), key=lambda kv: -kv[1][0]):
        print(f"    {name:28} PSS {pss / 1024:6.1f} MB  RSS {rss / 1024:6.1f} MB")


# Clicks Stop and resolves with the ms until "Stopped." shows (a note that was not there).
STOP = """
const done = arguments[arguments.length - 1];
const before = new Set(document.querySelectorAll('p.note'));
const stopped = () => [...document.querySelectorAll('p.note')]
  .some((p) => !before.has(p) && p.textContent.includes('Stopped.'));
const started = performance.now();
new MutationObserver((_, observer) => {
  if (stopped()) { observer.disconnect(); done(performance.now() - started); }
}).observe(document.body, {childList: true, subtree: true, characterData: true});
document.querySelector('header button.stop').click();
"""


def measure_stop(args, work):
    turns = [text_reply(f"Working on step {i}", hang_after=5) for i in range(args.runs)]
    app = App(args.app, args.standin, {"turns": turns}, work)
    latencies = []
    try:
        for i in range(args.runs):
            app.send(f"Go on ({i})")
            app.session.wait_for('article[aria-label="Deskhand (typing)"]', text="Working")
            latencies.append(app.session.execute_async(STOP))
    finally:
        app.close()
    print(f"stop, click to 'Stopped.' shown, mid-stream: {fmt(latencies, 'ms', 1)}")


class StampingProxy:
    """A TCP relay between the app and the stand-in that notes when each `tokNNNN` first
    arrives from the stand-in: the moment it arrives from the network."""

    def __init__(self, upstream_url):
        host, port = upstream_url.removeprefix("http://").rstrip("/").split(":")
        self.upstream = (host, int(port))
        self.arrivals = {}
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self.accept, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def accept(self):
        while True:
            client, _ = self.listener.accept()
            upstream = socket.create_connection(self.upstream)
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self.pump, args=(upstream, client, True), daemon=True).start()

    def pump(self, source, sink, stamp):
        try:
            while data := source.recv(65536):
                if stamp:
                    now = time.time()
                    for token in TOKEN.findall(data):
                        self.arrivals.setdefault(token.decode(), now)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()


TOKEN = re.compile(rb"tok\d{4}")
TOKENS = 150

# Notes, for every token, when it is first in the page's DOM and the start of the next frame.
WATCH_TOKENS = """
window.tokensSeen = {}; window.tokensFramed = {};
new MutationObserver(() => {
  const now = performance.timeOrigin + performance.now();
  const draft = document.querySelector('article[aria-label="Deskhand (typing)"]');
  if (!draft) return;
  for (const [token] of draft.textContent.matchAll(/tok\\d{4}/g)) {
    if (token in tokensSeen) continue;
    tokensSeen[token] = now;
    requestAnimationFrame(() => (tokensFramed[token] = performance.timeOrigin + performance.now()));
  }
}).observe(document.body, {childList: true, subtree: true, characterData: true});
"""


def measure_token(args, work):
    text = "".join(f"tok{i:04d} " for i in range(TOKENS))
    proxy = None

    def through_proxy(url):
        nonlocal proxy
        proxy = StampingProxy(url)
        return proxy.url

    app = App(args.app, args.standin, {"turns": [text_reply(text, delay_ms=40)]}, work,
              proxy=through_proxy)
    try:
        app.session.wait_for("h1", text="Deskhand")
        app.session.execute(WATCH_TOKENS)
        app.send("Stream")
        app.session.wait_for('article[aria-label="Deskhand"]', text=f"tok{TOKENS - 1:04d}",
                             timeout=60)
        seen = app.session.execute("return [tokensSeen, tokensFramed]")
    finally:
        app.close()
    dom = [seen[0][t] - proxy.arrivals[t] * 1000 for t in seen[0] if t in proxy.arrivals]
    framed = [seen[1][t] - proxy.arrivals[t] * 1000 for t in seen[1] if t in proxy.arrivals]
    print(f"streamed token, network to DOM: {fmt(dom, 'ms', 1)}")
    framed.sort()
    print(f"streamed token, network to the next frame: {fmt(framed, 'ms', 1)}, "
          f"p95 {framed[int(len(framed) * 0.95)]:.1f} ms")


# Scrolls `selector` from top to bottom in `frames` frames and resolves with the frame times.
SCROLL = """
const [selector, frames, done] = arguments;
const box = document.querySelector(selector);
box.scrollTop = 0;
const step = Math.max(1, (box.scrollHeight - box.clientHeight) / frames);
const times = [];
let last = null;
const tick = (t) => {
  if (last !== null) times.push(t - last);
  last = t;
  if (box.scrollTop + box.clientHeight >= box.scrollHeight - 1) {
    done({times, height: box.scrollHeight});
    return;
  }
  box.scrollTop += step;
  requestAnimationFrame(tick);
};
requestAnimationFrame(() => requestAnimationFrame(tick));
"""

# Clicks a session's sidebar row and resolves when its actions and screenshots are all shown:
# the time that took and the frame times meanwhile.
OPEN = """
const [row, entries, screenshots, done] = arguments;
const started = performance.now();
const times = [];
let last = null;
const shown = () => document.querySelectorAll('aside li.entry').length === entries &&
  [...document.querySelectorAll('aside img[alt^="Screen after"]')]
    .filter((i) => i.complete && i.naturalWidth > 0).length === screenshots;
const tick = (t) => {
  if (last !== null) times.push(t - last);
  last = t;
  if (shown()) done({ms: performance.now() - started, times});
  else requestAnimationFrame(tick);
};
document.querySelector(row).click();
requestAnimationFrame(tick);
"""

STEPS = 250  # model turns: 100 screenshots and 150 cursor positions, 2 messages each


def big_session_script():
    turns = []
    for i in range(STEPS):
        action = "screenshot" if i % 5 < 2 else "cursor_position"
        turns.append({"kind": "reply", "content": [
            {"type": "text", "text": f"Step {i + 1}: checking the screen before going on."},
            {"type": "tool_use", "name": "computer", "input": {"action": action}}]})
    turns.append(text_reply("All 250 steps done."))
    return {"turns": turns}


def frame_stats(name, times):
    times = sorted(times)
    slow = sum(t > 50 for t in times)
    print(f"{name}: {len(times)} frames, frame time median {median(times):.1f} ms, "
          f"p95 {times[int(len(times) * 0.95)]:.1f} ms, max {times[-1]:.1f} ms, "
          f"{slow} over 50 ms")


def measure_scroll(args, work):
    settings = dict(SETTINGS, approval_mode="auto")
    app = App(args.app, args.standin, big_session_script(), work, settings=settings)
    s = app.session
    try:
        started = time.monotonic()
        app.send("Take 100 screenshots")
        s.wait_for('article[aria-label="Deskhand"]', text="All 250 steps done.", timeout=900)
        # The window draws a long list a chunk a frame, and not while it is the small bar:
        # count once the counts stop changing.
        counts, previous = None, {}
        while counts != previous:
            previous = counts
            time.sleep(0.5)
            counts = s.execute("""return {
                messages: document.querySelectorAll('section.chat article').length,
                entries: document.querySelectorAll('aside li.entry').length,
                screenshots: [...document.querySelectorAll('aside img[alt^="Screen after"]')]
                  .filter((i) => i.complete && i.naturalWidth > 0).length}""")
        print(f"big session: {counts['messages']} chat messages, {counts['entries']} actions, "
              f"{counts['screenshots']} screenshots shown, run took "
              f"{time.monotonic() - started:.0f} s")
        for name, selector in (("chat", "section.chat .messages"), ("side panel", "aside .scroll")):
            result = s.execute_async(SCROLL, selector, 300)
            frame_stats(f"scrolling the {name} ({result['height']} px)", result["times"])
        session_id = s.wait_for("nav li.row.active").attribute("data-session-id")
        s.click("nav button", text="New session")
        s.wait_gone("section.chat article")
        opened = s.execute_async(OPEN, f'nav li[data-session-id="{session_id}"] button.open',
                                 counts["entries"], counts["screenshots"])
        frame_stats(f"opening it from the sidebar: all {counts['screenshots']} screenshots shown "
                    f"after {opened['ms']:.0f} ms", opened["times"])
        for name, selector in (("chat", "section.chat .messages"), ("side panel", "aside .scroll")):
            result = s.execute_async(SCROLL, selector, 300)
            frame_stats(f"scrolling the reopened {name} ({result['height']} px)", result["times"])
    finally:
        app.close()


def step_times(events):
    """{step: [duration_ms, ...]} of the tool results among `events` (dicts), a step being
    the tool and, for the computer tool, its action."""
    times, actions = {}, {}
    for event in events:
        if event.get("type") == "tool_call":
            actions[event["id"]] = event["input"].get("action", "")
        if event.get("type") == "tool_result" and not event.get("is_error"):
            step = event["name"]
            if step == "computer":
                step = f"computer {actions.get(event['id'], '')}"
            times.setdefault(step, []).append(event["duration_ms"])
    return times


def measure_aside(args, work):
    from app_e2e import GtkFixture, computer  # noqa: E402 (the e2e test's own fixture)
    from harness import model_point  # noqa: E402
    steps = max(args.runs, 10)
    fixture = GtkFixture("Deskhand measure aside")
    try:
        cancel = list(model_point(fixture.centre("Cancel")))
        ui = {"kind": "reply", "content": [{"type": "tool_use", "name": "ui", "input": {
            "action": "click", "role": "push button", "name": "Save"}}]}
        # A screenshot has no settling to wait for: its step shows the window's own cost.
        turns = [turn for _ in range(steps)
                 for turn in (computer(action="screenshot"),
                              computer(action="left_click", coordinate=cancel), ui)]
        script = {"turns": turns + [text_reply("Done.")]}
        settings = dict(SETTINGS, approval_mode="auto", screenshot_size=None)
        window_dir, cli_dir = os.path.join(work, "window"), os.path.join(work, "cli")
        os.makedirs(window_dir)
        os.makedirs(cli_dir)
        # The window writes each step's own time to step aside here (its benchmark hook).
        aside_log = os.path.join(work, "aside.log")
        os.environ["DESKHAND_ASIDE_LOG"] = aside_log
        try:
            app = App(args.app, args.standin, script, window_dir, settings=settings)
        finally:
            del os.environ["DESKHAND_ASIDE_LOG"]
        try:
            app.send("Press Cancel and Save, again and again")
            app.session.wait_for('article[aria-label="Deskhand"]', text="Done.", timeout=300,
                                 what="the end of the run")
        finally:
            app.close()
        import sqlite3
        with sqlite3.connect(os.path.join(window_dir, "data", "history.db")) as db:
            rows = db.execute("SELECT body FROM events WHERE type IN ('tool_call', 'tool_result')"
                              " ORDER BY id").fetchall()
        window = step_times(json.loads(body) for (body,) in rows)
        standin, url = start_standin(args.standin, script, cli_dir)
        try:
            cli = os.path.join(os.path.dirname(args.app), "deskhand")
            out = subprocess.run(
                [cli, "ask", "--json", "--approve", "auto", "--tools", "computer,ui", "--max-turns", "1000",
                 "--provider", "anthropic", "--model", "claude-sonnet-4-5",
                 "Press Cancel and Save, again and again"],
                env=app_env(cli_dir, url), capture_output=True, text=True, timeout=300)
        finally:
            standin.terminate()
            standin.wait()
        terminal = step_times(json.loads(line) for line in out.stdout.splitlines()
                              if line.startswith("{"))
    finally:
        fixture.close()
    aside = {}
    with open(aside_log) as log:
        for line in log:
            kind, took = line.split()
            aside.setdefault(kind, []).append(float(took))
    for kind in ("computer.screenshot", "computer.left_click", "ui.click"):
        # The first step also shrinks the window into the bar: the steps after it are each
        # step's own cost.
        print(f"aside, {kind}: the window's own time to step aside "
              f"{fmt(aside.get(kind, [])[1:], 'ms', 1)}")
    for step in ("computer screenshot", "computer left_click", "ui"):
        if len(window.get(step, [])) < steps or len(terminal.get(step, [])) < steps:
            sys.exit(f"aside: not every {step} step ran: window {window}, cli {terminal}, "
                     f"cli stderr {out.stderr[-2000:]}")
        w, c = median(window[step]), median(terminal[step])
        print(f"aside, {step} step: window {fmt(window[step], 'ms')}; "
              f"cli {fmt(terminal[step], 'ms')}; window - cli {w - c:.0f} ms, "
              f"window / cli {w / c:.2f}")


MEASURES = {"start": measure_start, "memory": measure_memory, "stop": measure_stop,
            "token": measure_token, "scroll": measure_scroll,
            "aside": measure_aside}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("app")
    parser.add_argument("standin")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle", type=float, default=5.0, help="seconds idle before memory")
    parser.add_argument("--only", default=",".join(MEASURES), help="comma-separated measures")
    args = parser.parse_args()
    print(f"measuring {args.app}: {args.runs} runs each", flush=True)
    for name in args.only.split(","):
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as work:
            MEASURES[name](args, work)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
