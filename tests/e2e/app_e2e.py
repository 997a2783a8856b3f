#!/usr/bin/env python3
"""End-to-end test of the desktop app: the built binary on the test display, driven over
WebDriver (tauri-driver + WebKitWebDriver), talking to the stand-in model server. Clicks are
checked on the X display itself: an `xev` window records every button press that reaches it.

Usage: tests/e2e/app_e2e.py APP_BINARY STANDIN_BINARY [--screenshot PNG] [--only PHASE]
Needs DISPLAY (a 1920x1080 screen with a window manager; scripts/test.sh starts Xvfb and
openbox), `tauri-driver`, `WebKitWebDriver` and `xev` on PATH, and a D-Bus session bus
(dbus-run-session) where the test serves org.freedesktop.Notifications itself. With --screenshot, writes a
screenshot of the window mid-run there (the README's picture). The elements phase also needs
Python's GTK 3 bindings (python3-gi, gir1.2-gtk-3.0) and is skipped with a note without them,
unless DESKHAND_TEST_ELEMENTS is set. --only elements (or accessibility) runs that phase alone.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (App, check, display_size, gl_drivers, model_point,  # noqa: E402
                     process_tree, screen_point, text_reply)

# Two points inside the click recorder's window: the first click is approved, the second denied.
RECORDER = (1480, 700, 400, 300)  # x, y, width, height
APPROVED = (1560, 860)
DENIED = (1800, 940)


HELLO = "Hello from **the stand-in**. " * 6

# What a prompt-injected page can make the model write: a form (raw HTML) and a link.
HOSTILE = ('I read the page.\n\n'
           '<form action="https://evil.example/steal"><input name="q" value="go">'
           '<button>Continue</button></form>\n\n'
           'See [the documentation](https://evil.example/docs?from=deskhand#top).\n')
LINK = "https://evil.example/docs?from=deskhand#top"

# The command of the run that goes on with the window hidden in the tray.
TRAY_COMMAND = "echo from the tray"

# An approval card takes no decision in its first 700 ms (ApprovalCard.svelte).
CARD_SETTLE_S = 0.8


def computer(**action):
    return {"kind": "reply", "content": [{"type": "tool_use", "name": "computer", "input": action}]}


def plan(action, steps):
    return {"kind": "reply",
            "content": [{"type": "tool_use", "name": "plan", "input": {"action": action, "steps": steps}}]}


def script():
    click = lambda point: computer(action="left_click", coordinate=list(model_point(point)))  # noqa: E731
    return {
        # Every image the app sends is decoded and checked, the attached screenshot included.
        "validate_images": True,
        "turns": [
            # "Say hello": streamed text, slowly enough to see it arrive.
            text_reply(HELLO, delay_ms=60),
            # "Click": a screenshot (no approval needed), a click that is approved, one that is
            # denied, then a closing word.
            computer(action="screenshot"),
            click(APPROVED),
            click(DENIED),
            text_reply("One click done, the other one was denied."),
            # "Keep going": a stream that never ends, stopped from the window.
            text_reply("Working on it, step one", hang_after=5),
            # "Continue": the stopped session, reopened from the sidebar, goes on.
            text_reply("Continued after the stop."),
            # "Plan it": a plan written, ticked and replanned (read-only: nothing to approve).
            plan("set", [{"id": "1", "title": "Open Firefox"},
                         {"id": "2", "title": "Find the invoice"},
                         {"id": "3", "title": "Print it"}]),
            plan("update", [{"id": "1", "status": "done"},
                            {"id": "2", "status": "in_progress", "note": "searching"}]),
            plan("set", [{"id": "1", "title": "Open Firefox", "status": "done"},
                         {"id": "2", "title": "Find the invoice", "status": "in_progress"},
                         {"id": "4", "title": "Export it as PDF"}]),
            text_reply("Planned."),
            # "And again": stopped by the global shortcut, with the window not focused.
            text_reply("Working again", hang_after=5),
            # "Read that page": the hostile reply, streamed whole, then a stream that does
            # not end (message_start, ping, content_block_start, then 8-character deltas).
            text_reply(HOSTILE, hang_after=3 + math.ceil(len(HOSTILE) / 8)),
            # "Work in the tray": the window is closed mid-run; the run asks for approval, and
            # (closed again) ends, each announced by a desktop notification.
            {"kind": "reply", "chunk_delay_ms": 400,
             "content": [{"type": "text", "text": "Working while you are away."},
                         {"type": "tool_use", "name": "bash", "input": {"command": TRAY_COMMAND}}]},
            text_reply("Finished while hidden. " * 4, delay_ms=300),
        ],
    }


class ClickRecorder:
    """An `xev` window that prints every button press the X server delivers to it."""

    def __init__(self, work):
        self.log = os.path.join(work, "xev.log")
        x, y, width, height = RECORDER
        self.process = subprocess.Popen(
            ["xev", "-geometry", f"{width}x{height}+{x}+{y}", "-name", "deskhand-e2e-clicks",
             "-event", "button"],
            stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        try:
            subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name",
                            "^deskhand-e2e-clicks$"], check=True, capture_output=True, timeout=10)
        except subprocess.SubprocessError as error:
            self.close()
            raise AssertionError(f"the click recorder (xev) did not show: {error}") from None

    def output(self):
        with open(self.log) as f:
            return f.read()

    def presses(self):
        """Root coordinates of every ButtonPress so far."""
        events = self.output().split("\n\n")
        return [tuple(map(int, re.search(r"root:\((\d+),(\d+)\)", e).groups()))
                for e in events if e.lstrip().startswith("ButtonPress")]

    def close(self):
        self.process.terminate()
        self.process.wait()


def near(a, b, slack=1):
    return abs(a[0] - b[0]) <= slack and abs(a[1] - b[1]) <= slack


def run(app, app_binary, clicks, notifications, screenshot_path):
    s = app.session
    s.wait_for("h1", text="Deskhand", what="the window")

    # Idle memory: the window's own process keeps the GL driver out (webkit_env.rs), while
    # WebKit's web process, which draws the page, still loads it.
    drivers = {}
    for pid in process_tree(app_binary):
        with open(f"/proc/{pid}/comm") as f:
            drivers[f.read().strip()] = gl_drivers(pid)
    check("the window's process loads no GL driver; WebKit's web process does",
          drivers.get("deskhand-app") == [] and drivers.get("WebKitWebProces", []) != [],
          f"{drivers}")

    # A message with a screenshot attached, answered by streamed text.
    s.click("button", text="Attach screenshot")
    thumb = s.wait_for('figure.thumb img[alt="screenshot"]', what="the screenshot's thumbnail")
    check("Attach screenshot captures the screen into a thumbnail",
          s.execute("return arguments[0].naturalWidth", thumb.ref) == 1366)
    app.send("Say hello")
    s.wait_for('article[aria-label="You"] img[alt="Attached image"]',
               what="the sent message's image")
    draft = s.wait_for('article[aria-label="Deskhand (typing)"]', text="Hello from the stand-in",
                       what="streamed text")
    check("text streams in before the message is complete",
          len(draft.seen) < len(HELLO.replace("**", "").strip()), draft.seen)
    final = s.wait_for('article[aria-label="Deskhand"]', text="Hello from the stand-in")
    check("the finished message renders Markdown", s.execute(
        "return document.querySelector('article[aria-label=\"Deskhand\"] strong')"
        "?.textContent") == "the stand-in", final.seen)

    # One click approved, one denied: only the approved one reaches the X display.
    app.send("Click")
    card = s.wait_for('section[aria-label="Approval needed"]', what="the first approval")
    check("the approval shows where the click lands",
          s.find_all('section[aria-label="Approval needed"] [data-testid="marker"]') != [],
          card.seen[:80])
    time.sleep(CARD_SETTLE_S)
    s.click('section[aria-label="Approval needed"] button', text="Approve", from_script=True)
    s.wait_gone('section[aria-label="Approval needed"]')
    s.wait_for('li.entry.done img[alt^="Screen after left_click"]',
               what="the approved click's screenshot")
    s.wait_for('section[aria-label="Approval needed"]', text="left_click", what="the second approval")
    # The window came back from the bar for the approval without taking the focus: it asks
    # the window manager for attention instead (the urgency hint of its WM_HINTS).
    check("an approval asks for attention", *wm_urgency())
    if screenshot_path:
        # The window is back from the bar: let it draw at full size first.
        s.execute_async("const done = arguments[0];"
                        "requestAnimationFrame(() => requestAnimationFrame(() => done()));")
        s.screenshot(screenshot_path)
        check("a screenshot of the window mid-run is written", os.path.getsize(screenshot_path)
              > 10_000, screenshot_path)
    reason = s.wait_for('section[aria-label="Approval needed"] label.reason input')
    reason.send_keys("not that one")
    time.sleep(CARD_SETTLE_S)
    s.click('section[aria-label="Approval needed"] button', text="Deny", from_script=True)
    s.wait_for('article[aria-label="Deskhand"]', text="the other one was denied")
    presses = clicks.presses()
    check("only the approved click happened on the display",
          len(presses) == 1 and near(presses[0], screen_point(model_point(APPROVED))),
          f"presses at {presses}")
    check("the denied click is shown with its reason", s.wait_for(
        "li.entry.denied", text="not that one", what="the denied entry") is not None)
    shots = s.execute(
        "return [...document.querySelectorAll('aside img[alt^=\"Screen after\"]')]"
        ".map(i => i.complete ? i.naturalWidth : 0)")
    check("both screenshots are in the side panel", shots == [1366, 1366], f"widths {shots}")

    # A run stopped mid-stream, and the session continued.
    app.send("Keep going")
    s.wait_for('article[aria-label="Deskhand (typing)"]', text="Working on it")
    stop_ms = s.execute_async("""
        const done = arguments[arguments.length - 1];
        const started = performance.now();
        const stopped = () => [...document.querySelectorAll('p.note')]
            .some(p => p.textContent.includes('Stopped.'));
        new MutationObserver((_, observer) => {
            if (stopped()) { observer.disconnect(); done(performance.now() - started); }
        }).observe(document.body, {childList: true, subtree: true, characterData: true});
        document.querySelector('header button.stop').click();
    """)
    check("Stop ends a run mid-stream", True, f"{stop_ms:.0f} ms from the click to 'Stopped.'")
    check("the partial text is kept", s.wait_for('article[aria-label="Deskhand"]',
                                                 text="Working on it") is not None)

    # Reopened from the sidebar, with its timeline, and continued.
    row = s.wait_for("nav li.row.active[data-session-id]", what="the session's sidebar row")
    session_id = row.attribute("data-session-id")
    s.click("nav button", text="New session")
    s.wait_gone("section.chat article")
    s.click(f'nav li[data-session-id="{session_id}"] button.open')
    s.wait_for('article[aria-label="Deskhand"]', text="Working on it", what="the reopened chat")
    s.wait_for('article[aria-label="Deskhand"]', text="Hello from the stand-in")
    shots = s.execute(
        "return [...document.querySelectorAll('aside img[alt^=\"Screen after\"]')].length")
    check("the session reopens from the sidebar with its timeline", shots == 2,
          f"{shots} screenshots in the side panel")
    app.send("Continue")
    s.wait_for('article[aria-label="Deskhand"]', text="Continued after the stop.")
    check("the reopened session continues", s.wait_for(
        "nav li.row.active", what="the active row").attribute("data-session-id") == session_id)

    # The plan above the timeline: written, ticked and replanned, with what the replan changed.
    app.send("Plan it")
    s.wait_for('article[aria-label="Deskhand"]', text="Planned.")
    steps = s.execute(
        "return [...document.querySelectorAll('aside [data-testid=\"plan\"] li')]"
        ".map(li => [li.dataset.stepId, li.dataset.status])")
    check("the plan is above the timeline with its steps ticked",
          steps == [["1", "done"], ["2", "in_progress"], ["4", "pending"]] and s.execute(
              "const plan = document.querySelector('aside [data-testid=\"plan\"]');"
              "const timeline = document.querySelector('aside .scroll');"
              "return !!(plan.compareDocumentPosition(timeline) & Node.DOCUMENT_POSITION_FOLLOWING)"),
          f"{steps}")
    check("a replan shows what changed", s.wait_for(
        'aside [data-testid="removed-steps"]', text="Print it",
        what="the dropped step") is not None and s.find_all(
        'aside [data-testid="replanned"]') != [])

    # The global shortcut stops a run from anywhere: xdotool sends the keys to the X server,
    # which hands them to the app's key grab whichever window has the focus.
    app.send("And again")
    s.wait_for('article[aria-label="Deskhand (typing)"]', text="Working again")
    subprocess.run(["xdotool", "key", "ctrl+shift+Escape"], check=True)
    check("Ctrl+Shift+Escape stops the run", s.wait_for(
        "p.note", text="Stopped.", what="the stopped note") is not None)

    hostile_reply(app)
    hidden_in_the_tray(app, notifications)


# Where the stall phase clicks: inside the click recorder's window, which never changes.
STUCK = (1680, 850)


def stall_script():
    """A model that clicks the same spot forever (the stall breaker asks after 4 clicks)."""
    click = computer(action="left_click", coordinate=list(model_point(STUCK)))
    return {"turns": [click] * 12 + [text_reply("never reached")]}


def stall_question(app_binary, standin_binary, work):
    """Issue 19 in the window: in auto mode, a model stuck on one click is asked about in
    the side panel; a hint goes on, the stall goes on and is asked again, and Stop ends the
    run `stalled`."""
    settings = {"provider": "anthropic", "model": "claude-sonnet-4-5", "approval_mode": "auto",
                "max_turns": 50, "monitor": None, "screenshot_size": None}
    app = App(app_binary, standin_binary, stall_script(), work, settings=settings)
    try:
        s = app.session
        s.wait_for("h1", text="Deskhand", what="the second window")
        app.send("Save it")
        card = 'section[aria-label="The agent seems stuck"]'
        seen = s.wait_for(card, text="same action", timeout=60, what="the stall question")
        check("a stall is asked about in the side panel, in auto mode", True, seen.seen[:90])
        check("the stall question asks for attention", *wm_urgency())
        s.wait_for(f"{card} input").send_keys("use the keyboard instead")
        time.sleep(CARD_SETTLE_S)
        s.click(f"{card} button", text="Continue with hint", from_script=True)
        s.wait_gone(card)
        s.wait_for(card, timeout=60, what="the second stall question")
        check("after the hint the run goes on, and a stall that goes on is asked again",
              s.execute("return document.querySelectorAll('aside li.entry').length") >= 8)
        time.sleep(CARD_SETTLE_S)
        s.click(f"{card} button", text="Stop", from_script=True)
        check("Stop on the card ends the run stalled", s.wait_for(
            "p.note", text="the agent was stuck", what="the stalled note") is not None)
        check("the card is gone", s.find_all(card) == [])
    except BaseException:
        app.dump_logs()
        raise
    finally:
        app.close()


# Where the Responses API phase clicks: inside the click recorder's window.
ACKNOWLEDGED = (1600, 760)
SAFETY_CHECK = {"id": "cu_sc_e2e", "code": "malicious_instructions",
                "message": "The page asks to ignore the task"}


def responses_script():
    """OpenAI's Responses API: one computer call carrying a safety check, then an answer."""
    x, y = model_point(ACKNOWLEDGED)
    call = {"kind": "reply", "content": [{
        "type": "computer_call", "action": {"type": "click", "button": "left", "x": x, "y": y},
        "pending_safety_checks": [SAFETY_CHECK]}]}
    return {"turns": [call, text_reply("Clicked after the check.")]}


def responses_safety_check(app_binary, standin_binary, work, clicks):
    """Issue 17 in the window: with OpenAI's computer-use model, a computer call carrying a
    safety check is asked even in auto mode, shows the check and offers no "always"; Approve
    acknowledges it, the click lands on the display, and the run's answer comes back."""
    settings = {"provider": "openai", "model": "computer-use-preview", "approval_mode": "auto",
                "max_turns": 10, "monitor": None, "screenshot_size": None}
    app = App(app_binary, standin_binary, responses_script(), work, settings=settings)
    try:
        s = app.session
        s.wait_for("h1", text="Deskhand", what="the Responses API window")
        before = len(clicks.presses())
        app.send("Click the button")
        card = 'section[aria-label="Approval needed"]'
        check_box = s.wait_for(f'{card} [aria-label="Safety check"]', timeout=60,
                               what="the safety check")
        check("a safety check is asked in auto mode and shown in full",
              "malicious_instructions" in check_box.seen and "ignore the task" in check_box.seen,
              check_box.seen[:120])
        check("a safety check offers no always-allow",
              s.execute(f"return [...document.querySelectorAll('{card} button')]"
                        ".some(b => b.textContent.includes('Always allow'))") is False)
        time.sleep(CARD_SETTLE_S)
        s.click(f"{card} button", text="Approve", from_script=True)
        s.wait_gone(card)
        answer = s.wait_for('article[aria-label="Deskhand"]', text="Clicked after the check",
                            timeout=60, what="the answer after the acknowledged call")
        check("the run ends with the model's answer", answer is not None)
        presses = clicks.presses()[before:]
        check("the acknowledged click lands on the display",
              any(near(p, ACKNOWLEDGED, slack=3) for p in presses), f"{presses}")
    except BaseException:
        app.dump_logs()
        raise
    finally:
        app.close()


# The GTK 3 fixture of the element tests: buttons Delete, Cancel and Save, reporting presses.
GTK_FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "crates",
                           "cli", "tests", "fixtures", "gtk_fixture.py")
# The system's Python, which Debian's GTK bindings belong to.
SYSTEM_PYTHON = "/usr/bin/python3"


def gtk_available():
    """Whether the fixture can run; a note if not (a failure under DESKHAND_TEST_ELEMENTS)."""
    found = subprocess.run([SYSTEM_PYTHON, "-c", "import gi; gi.require_version('Gtk', '3.0')"],
                           capture_output=True).returncode == 0
    if not found:
        if os.environ.get("DESKHAND_TEST_ELEMENTS"):
            raise AssertionError("DESKHAND_TEST_ELEMENTS is set but python3-gi with GTK 3 "
                                 "(python3-gi, gir1.2-gtk-3.0) is missing")
        print("skipped: the elements phase needs python3-gi with GTK 3", flush=True)
    return found


class GtkFixture:
    """The fixture window on the display; its JSON events (button presses) are collected."""

    def __init__(self, title, paper=None):
        env = dict(os.environ, DESKHAND_FIXTURE_PAPER=paper) if paper else None
        self.process = subprocess.Popen([SYSTEM_PYTHON, GTK_FIXTURE, title],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, env=env)
        self.events = []
        ready = threading.Event()

        def read():
            for line in self.process.stdout:
                event = json.loads(line)
                self.events.append(event)
                if "ready" in event:
                    self.bounds = event["ready"]
                    ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(20):
            self.close()
            raise AssertionError("the GTK fixture did not report its bounds")

    def centre(self, name):
        x, y, width, height = self.bounds[name]
        return x + width // 2, y + height // 2

    def clicked(self, name, timeout=10):
        return self.reported({"clicked": name}, timeout)

    def reported(self, event, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if event in self.events:
                return True
            time.sleep(0.05)
        return False

    def close(self):
        self.process.terminate()
        self.process.wait()


def approval_names_the_target(app_binary, standin_binary, work):
    """Issue 23 in the window: a computer-tool click on the GTK fixture's Delete button is
    approved in a card that names "Delete" and its role, the side panel's timeline shows the
    same name after approval, and the approved click presses Delete."""
    if not gtk_available():
        return
    fixture = GtkFixture("Deskhand e2e fixture")
    app = None
    try:
        delete = fixture.centre("Delete")
        script = {"turns": [computer(action="left_click", coordinate=list(model_point(delete))),
                            text_reply("Pressed Delete.")]}
        settings = {"provider": "anthropic", "model": "claude-sonnet-4-5", "approval_mode": "ask",
                    "max_turns": 10, "monitor": None, "screenshot_size": None}
        app = App(app_binary, standin_binary, script, work, settings=settings)
        s = app.session
        s.wait_for("h1", text="Deskhand", what="the elements window")
        app.send("Delete the file")
        card = 'section[aria-label="Approval needed"]'
        target = s.wait_for(f'{card} [data-testid="approval-target"]', timeout=60,
                            what="the approval's target")
        check("the approval card names the button and its role",
              "Delete" in target.seen and "(push button)" in target.seen, target.seen)
        check("the name is in bold, and the target is marked sensitive",
              s.execute(f"return document.querySelector('{card} [data-testid=\"approval-target\"]"
                        " strong')?.textContent") == "Delete"
              and "sensitive" in target.seen, target.seen)
        summary = s.wait_for(f"{card} p.summary").seen
        check("the card's summary says it in words too, the name in bold and no markup shown",
              "Delete (push button)" in summary and "**" not in summary
              and s.execute(f"return document.querySelector('{card} p.summary strong')"
                            "?.textContent") == "Delete", summary)
        time.sleep(CARD_SETTLE_S)
        s.click(f"{card} button", text="Approve", from_script=True)
        s.wait_gone(card)
        entry = s.wait_for('li.entry [data-testid="timeline-target"]', text="Delete",
                           what="the timeline's target")
        check("the side panel's timeline shows the same name after approval",
              "(push button)" in entry.seen, entry.seen)
        s.wait_for('article[aria-label="Deskhand"]', text="Pressed Delete", timeout=60,
                   what="the answer after the click")
        check("the approved click pressed Delete", fixture.clicked("Delete"), f"{fixture.events}")
    except BaseException:
        if app:
            app.dump_logs()
        raise
    finally:
        if app:
            app.close()
        fixture.close()


# The fixture's drawing, painted orange for the phase below: no part of Deskhand is orange.
ORANGE = "1,0.5,0"


def last_screenshot_pixels(session, points):
    """The RGB of the side panel's newest screenshot (the one the model saw last) at `points`
    (model coordinates), read in the webview from the image itself."""
    return session.execute_async(
        "const [points, done] = arguments;"
        "const shots = document.querySelectorAll('li.entry .shot img');"
        "const img = shots[shots.length - 1];"
        "const read = () => { const c = document.createElement('canvas');"
        "  c.width = img.naturalWidth; c.height = img.naturalHeight;"
        "  const g = c.getContext('2d'); g.drawImage(img, 0, 0);"
        "  done(points.map(([x, y]) => Array.from(g.getImageData(x, y, 1, 1).data.slice(0, 3)))); };"
        "if (!img) { done(null); } else if (img.complete && img.naturalWidth) { read(); }"
        "else { img.onload = read; }", points)


def stored_results(work, ready, timeout=30):
    """The tool results the app stored, once `ready(results)` holds."""
    import sqlite3
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with sqlite3.connect(os.path.join(work, "data", "history.db")) as db:
            rows = db.execute("SELECT body FROM events WHERE type = 'tool_result' ORDER BY id")
            results = [json.loads(body) for (body,) in rows.fetchall()]
        if ready(results):
            return results
        time.sleep(0.1)
    raise AssertionError("the app did not store the tool results expected")


def wait_ui_found(work):
    """The elements of the first `ui` find of the run, once the app stored its result."""
    results = stored_results(work, lambda results: any(r["name"] == "ui" for r in results))
    first = next(r for r in results if r["name"] == "ui")
    return json.loads(first["text"])["elements"]


def acts_on_an_app_behind_the_window(app_binary, standin_binary, work, members):
    """Issue 38: a GTK app that exposes accessibility lies under the full Deskhand window, in
    Ask mode, and each step is approved with the X pointer, as a person does: a `ui` click on
    Save, a computer click on Cancel, a `ui` click into the Title entry and a computer `type`.
    The app reports each click and the typed text, and the last screenshot the model saw shows
    the app, not Deskhand. With `members`, the computer steps are GA toolset member calls
    (Opus 5.5); otherwise the `computer` tool's actions (Sonnet 4.5)."""
    if not gtk_available():
        return
    fixture = GtkFixture("Deskhand e2e app behind", paper=ORANGE)
    app = None
    try:
        def act(action, **input):
            if members:
                return {"kind": "reply", "content": [{"type": "tool_use", "name": action,
                                                      "input": input, "toolset_name": "computer"}]}
            return computer(action=action, **input)

        def ui(**input):
            return {"kind": "reply", "content": [{"type": "tool_use", "name": "ui", "input": input}]}

        cancel = model_point(fixture.centre("Cancel"))
        # The find comes slowly, so that Deskhand's own native dialog is open when it runs.
        find = {"kind": "reply", "chunk_delay_ms": 1000,
                "content": [{"type": "text", "text": "Let me look at the buttons first."},
                            {"type": "tool_use", "name": "ui",
                             "input": {"action": "find", "role": "push button"}}]}
        script = {"turns": [act("screenshot"), find,
                            ui(action="click", role="push button", name="Save"),
                            act("left_click", coordinate=list(cancel)),
                            ui(action="click", role="text", name="Title"),
                            act("type", text="+1="),
                            act("screenshot"),
                            text_reply("Typed it.")]}
        model = "claude-opus-5-5" if members else "claude-sonnet-4-5"
        settings = {"provider": "anthropic", "model": model, "approval_mode": "ask",
                    "max_turns": 20, "monitor": None, "screenshot_size": None}
        app = App(app_binary, standin_binary, script, work, settings=settings)
        s = app.session
        s.wait_for("h1", text="Deskhand", what="the window")
        # The full window over the app: the fixture (100, 100, 640 x 420) lies under it.
        window = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "^Deskhand$"],
                                check=True, capture_output=True, text=True).stdout.split()[0]
        subprocess.run(["xdotool", "windowsize", "--sync", window, "1100", "760",
                        "windowmove", "--sync", window, "40", "40",
                        "windowactivate", "--sync", window], check=True, timeout=10)
        app.send("Press Save and Cancel, then type +1= into the title")
        # As the mode switch does, once the screenshot is taken (the window is the bar by now,
        # and not hidden for that step).
        stored_results(work, lambda results: len(results) >= 1)
        s.execute("window.__TAURI_INTERNALS__.invoke('set_approval_mode', {mode: 'auto'})"
                  ".catch(() => {})")
        dialog = native_dialog("Switch to Auto?")
        check("Deskhand's own confirmation is open while the element map is read",
              dialog is not None)
        found = wait_ui_found(work)
        subprocess.run(["xdotool", "windowactivate", "--sync", dialog], check=True, timeout=10)
        subprocess.run(["xdotool", "key", "--clearmodifiers", "Escape"], check=True, timeout=10)
        check("the element map lists the app's buttons and none of Deskhand's own windows "
              "or dialogs",
              {"Delete", "Cancel", "Save"} <= {e["name"] for e in found}
              and not [e for e in found if e["app"].startswith("deskhand")
                       or e["name"] == "Switch to Auto"],
              f"{[(e['name'], e['app'], e['window']) for e in found]}")
        card = 'section[aria-label="Approval needed"]'
        for step, happened in [("ui click on Save", lambda: fixture.clicked("Save")),
                               ("computer click on Cancel", lambda: fixture.clicked("Cancel")),
                               ("ui click into Title", lambda: True),
                               ("computer type", lambda: fixture.reported({"entry": "+1="}))]:
            s.wait_for(card, timeout=60, what=f"the approval of the {step}")
            time.sleep(CARD_SETTLE_S)
            x_click(s, s.wait_for(f"{card} button", text="Approve"))
            check(f"the {step}, approved with the pointer, reached the app behind the window",
                  happened(), f"{fixture.events}")
        s.wait_for('article[aria-label="Deskhand"]', text="Typed it.", timeout=60,
                   what="the answer after the steps")
        drawing = fixture.bounds["drawing"]
        corners = [model_point((drawing[0] + 6, drawing[1] + 6)),
                   model_point((drawing[0] + drawing[2] - 6, drawing[1] + drawing[3] - 6))]
        pixels = last_screenshot_pixels(s, [list(p) for p in corners])
        check("the last screenshot the model saw shows the app, not Deskhand's window over it",
              pixels is not None and all(r > 200 and 90 < g < 170 and b < 60 for r, g, b in pixels),
              f"{pixels} at {corners}")
    except BaseException:
        if app:
            app.dump_logs()
        raise
    finally:
        if app:
            app.close()
        fixture.close()


def apps_behind_the_window(app_binary, standin_binary, work):
    """The phase above with the `computer` tool, then with the GA toolset's members."""
    for members in (False, True):
        os.makedirs(os.path.join(work, str(members)))
        acts_on_an_app_behind_the_window(app_binary, standin_binary,
                                         os.path.join(work, str(members)), members)


def wm_urgency():
    """Whether the app's window has the urgency hint of its WM_HINTS set, and those hints."""
    window = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "^Deskhand$"],
                            check=True, capture_output=True, text=True).stdout.split()[0]
    hints = subprocess.run(["xprop", "-id", window, "WM_HINTS"], check=True,
                           capture_output=True, text=True).stdout
    return "urgency hint bit is set" in hints, hints


def x_click(session, element, button=1):
    """Clicks the middle of `element`'s first line with the X server's pointer, as a person
    would (WebDriver's click refuses a window without the focus)."""
    x, y = session.execute("arguments[0].scrollIntoView({block: 'center'});"
                           "const r = arguments[0].getClientRects()[0];"
                           "return [r.x + r.width / 2, r.y + r.height / 2]", element.ref)
    window = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "^Deskhand$"],
                            check=True, capture_output=True, text=True).stdout.split()[0]
    # (No --sync: it waits for the pointer to move, and it may be there already.)
    subprocess.run(["xdotool", "mousemove", "--window", window, str(round(x)), str(round(y)),
                    "sleep", "0.2", "click", str(button)], check=True, timeout=10)


def native_dialog(title, timeout=10):
    """The X window id of the shell's own (GTK) dialog titled `title`, once it shows."""
    try:
        found = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name",
                                title], check=True, capture_output=True,
                               text=True, timeout=timeout)
    except subprocess.SubprocessError:
        return None
    return found.stdout.split()[0]


def hostile_reply(app):
    """A reply with a form and a link, while its run goes on: clicking them leaves the window
    on the app, and the run can still be stopped."""
    s = app.session
    s.execute("window.deskhandPage = 'the same page'")
    home = s.execute("return location.href")
    app.send("Read that page")
    draft = 'article[aria-label="Deskhand (typing)"]'
    link = s.wait_for(f"{draft} a", text="the documentation", what="the reply's link")
    form = s.wait_for(f"{draft} p", text="<button>Continue</button>", what="the form, as text")
    s.wait_gone("p.note")  # the previous run's "Stopped."
    check("the reply's form is text: no form or control of it is in the page",
          s.execute("return document.querySelectorAll("
                    "'.markdown :is(form, input, select, textarea, dialog, [popover])').length")
          == 0, form.seen)
    x_click(s, form)

    # The link, clicked, middle-clicked and right-clicked on the display: each time the shell
    # asks first, in a dialog of its own (GTK, not the page) that shows the full address, and
    # Esc answers it, as Cancel.
    for button, how in [(1, "a click"), (2, "a middle-click"), (3, "the context menu")]:
        x_click(s, link, button)
        dialog = native_dialog("Open this link?")
        check(f"{how} on a link asks in a native dialog first", dialog is not None)
        subprocess.run(["xdotool", "windowactivate", "--sync", dialog], check=True, timeout=10)
        subprocess.run(["xdotool", "key", "--clearmodifiers", "Escape"], check=True, timeout=10)
        gone = time.monotonic() + 10
        while native_dialog("Open this link?", timeout=1) and time.monotonic() < gone:
            time.sleep(0.1)
        check("Esc answers the dialog with no", native_dialog("Open this link?", timeout=1)
              is None)

    # Had a form got through: its submit, to another site or to the app itself (which would
    # reload the page while the run goes on), is refused by the CSP; script that navigates or
    # opens a window, by the shell's navigation guard.
    s.execute("""
        for (const action of ['https://evil.example/steal', '/']) {
            const form = document.createElement('form');
            form.action = action;
            document.body.append(form);
            form.requestSubmit();
        }
        window.open('https://evil.example/popup');
    """)
    s.execute("setTimeout(() => { location.href = 'https://evil.example/replaced'; }, 0)")
    time.sleep(1.5)
    check("the window is still the app's page, and the only window",
          (s.execute("return location.href"), s.execute("return window.deskhandPage"),
           len(s._session("GET", "/window/handles")))
          == (home, "the same page", 1))
    check("the run can still be stopped", s.wait_for(
        "header button.stop", what="the Stop button") is not None)
    s.click("header button.stop", from_script=True)
    s.wait_for("p.note", text="Stopped.", what="the stopped note after the hostile reply")


class NotificationServer:
    """The desktop's notification service on the session bus (notification_server.py, on the
    system python's `gi`), recording every Notify call the app makes."""

    def __init__(self, work):
        self.log = os.path.join(work, "notifications.jsonl")
        open(self.log, "w").close()
        server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "notification_server.py")
        self.process = subprocess.Popen(["/usr/bin/python3", server, self.log],
                                        stdout=subprocess.PIPE, text=True)
        ready = self.process.stdout.readline().strip()
        if ready != "ready":
            self.close()
            raise AssertionError(f"the notification server did not start: {ready!r}")

    def sent(self):
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def wait_for(self, count, timeout=30):
        """The first `count` notifications, once that many arrived."""
        deadline = time.monotonic() + timeout
        while len(self.sent()) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.sent()[:count]

    def close(self):
        self.process.terminate()
        self.process.wait()


def visible_windows():
    found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "^Deskhand$"],
                           capture_output=True, text=True)
    return found.stdout.split()


def close_mid_run(app, words):
    """Closes the window once the run's reply shows `words`: Alt+F4, as a person would (openbox
    asks the window to close). Checks that it went to the tray rather than quitting."""
    app.session.wait_for('article[aria-label="Deskhand (typing)"]', text=words,
                         what="the run's first words")
    subprocess.run(["xdotool", "windowactivate", "--sync", visible_windows()[0], "key",
                    "alt+F4"], check=True, timeout=10)
    gone = time.monotonic() + 10
    while visible_windows() and time.monotonic() < gone:
        time.sleep(0.1)
    check("closing the window mid-run hides it to the tray", visible_windows() == [])


def wait_shown(timeout=10):
    deadline = time.monotonic() + timeout
    while not visible_windows() and time.monotonic() < deadline:
        time.sleep(0.1)
    return visible_windows() != []


def hidden_in_the_tray(app, notifications):
    """Closed while a run goes on, the window hides to the tray and the run goes on: its
    approval, then its end (closed again meanwhile), each raise a desktop notification and
    bring the window back; nothing else is announced."""
    s = app.session
    check("no notification while the window is shown", notifications.sent() == [],
          f"{notifications.sent()}")
    app.send("Work in the tray")
    close_mid_run(app, "Working while")
    asked = notifications.wait_for(1)
    check("an approval while hidden raises a notification with the action's summary",
          [(n["app_name"], n["summary"], n["body"]) for n in asked]
          == [("Deskhand", "Deskhand is waiting for approval", f"bash: {TRAY_COMMAND}")],
          f"{notifications.sent()}")
    check("the approval brings the window back from the tray", wait_shown())
    time.sleep(CARD_SETTLE_S)
    s.click('section[aria-label="Approval needed"] button', text="Approve", from_script=True)
    close_mid_run(app, "Finished while")
    ended = notifications.wait_for(2)
    check("the run's end while hidden raises a notification",
          [(n["summary"], n["body"]) for n in ended[1:]]
          == [("Deskhand has finished", "The task ended: done")], f"{notifications.sent()}")
    check("the end brings the window back", wait_shown())
    check("the run went on to its last reply", s.wait_for(
        'article[aria-label="Deskhand"]', text="Finished while hidden.",
        what="the last reply") is not None)
    check("nothing else was announced", len(notifications.sent()) == 2,
          f"{notifications.sent()}")


# axe-core, vendored as a devDependency of the window (ui/package.json), read from its package.
AXE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ui", "node_modules",
                   "axe-core", "axe.min.js")

# What can take the keyboard's focus, shown and enabled. A group of radio buttons is one stop
# of Tab (arrow keys move within it), so its buttons share an id.
CONTROLS_JS = """
const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
const all = [...document.querySelectorAll(
  'button, input, textarea, select, a[href], [tabindex]:not([tabindex="-1"])')];
return all.filter((el) => shown(el) && !el.matches(':disabled') && !el.closest('[inert]')).map((el, i) => {
  el.dataset.auditId = el.type === 'radio' && el.name ? `radio:${el.name}` : String(i);
  return {id: el.dataset.auditId, what: el.outerHTML.slice(0, 120)};
});
"""

# One press of Tab, as WebDriver's actions send it: to the focused element, wherever it is.
TAB = {"actions": [{"type": "key", "id": "keyboard", "actions": [
    {"type": "keyDown", "value": "\ue004"}, {"type": "keyUp", "value": "\ue004"}]}]}

# The buttons without an accessible name, as axe computes names (over its tree of the page).
UNNAMED_JS = """
axe.setup(document);
try {
  return [...document.querySelectorAll('button, [role="button"]')]
    .filter((el) => !axe.commons.text.accessibleText(el).trim())
    .map((el) => el.outerHTML.slice(0, 160));
} finally {
  axe.teardown();
}
"""


def audit_script():
    """A screenshot (no approval), then a command that waits for approval, then an answer."""
    bash = {"kind": "reply",
            "content": [{"type": "tool_use", "name": "bash", "input": {"command": "echo audit"}}]}
    return {"turns": [computer(action="screenshot"), bash, text_reply("Audited.")]}


def audit(s, what):
    """axe-core over the whole window, every control reached by Tab, every button named."""
    result = s.execute_async("""
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ['violations']}).then(
  (r) => done(r.violations.map((v) => ({id: v.id, impact: v.impact,
    nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5)}))),
  (e) => done({error: String(e)}));
""")
    check(f"axe ran over the window {what}", isinstance(result, list), f"{result}")
    serious = [v for v in result if v["impact"] in ("serious", "critical")]
    check(f"axe finds no serious or critical violation {what}", serious == [],
          json.dumps(serious if serious else [v["id"] for v in result]))
    unnamed = s.execute(UNNAMED_JS)
    check(f"every button has an accessible name {what}", unnamed == [], f"{unnamed}")

    controls = {c["id"]: c["what"] for c in s.execute(CONTROLS_JS)}
    s.execute("document.activeElement && document.activeElement.blur()")
    reached = set()
    for _ in range(2 * len(controls) + 5):
        s._session("POST", "/actions", TAB)  # to whatever has the focus, as a keyboard does
        now = s.execute("return document.activeElement && document.activeElement.dataset.auditId")
        if now is not None:
            reached.add(now)
        if reached >= controls.keys():
            break
    missed = [controls[i] for i in controls.keys() - reached]
    check(f"Tab reaches every control {what}", missed == [],
          f"{len(reached)} of {len(controls)} reached; missed {missed}")


def accessibility_audit(app_binary, standin_binary, work):
    """Issue 38: the window audited with axe-core (no serious or critical violation), every
    control reachable with Tab and every button named: idle, with an approval card and a step
    in the chat, and after the run's end."""
    settings = {"provider": "anthropic", "model": "claude-sonnet-4-5", "approval_mode": "ask",
                "max_turns": 10, "monitor": None, "screenshot_size": None}
    app = App(app_binary, standin_binary, audit_script(), work, settings=settings)
    try:
        s = app.session
        s.wait_for("h1", text="Deskhand", what="the audit's window")
        with open(AXE) as f:
            s.execute(f.read() + "\nreturn null;")
        check("axe-core is loaded into the webview", s.execute("return typeof axe.run") == "function")
        audit(s, "when idle")
        app.send("Audit me")
        s.wait_for('section[aria-label="Approval needed"]', timeout=60, what="the approval card")
        s.wait_for('[data-testid="story-line"]', text="Took a screenshot", what="the first step")
        audit(s, "with an approval card and steps in the chat")
        time.sleep(CARD_SETTLE_S)
        s.click('section[aria-label="Approval needed"] button', text="Approve")
        s.wait_for('[data-testid="run-end"]', text="Done", timeout=60, what="the run's end")
        audit(s, "after the run")
    except BaseException:
        app.dump_logs()
        raise
    finally:
        app.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("app")
    parser.add_argument("standin")
    parser.add_argument("--screenshot", help="where to write the window mid-run (PNG)")
    parser.add_argument("--only", choices=["elements", "behind", "accessibility"],
                        help="run this phase alone")
    args = parser.parse_args()
    size = display_size()
    if size != (1920, 1080):
        sys.exit(f"app_e2e: the display is {size[0]}x{size[1]}; the test expects 1920x1080")
    if args.only:
        only = {"elements": approval_names_the_target, "behind": apps_behind_the_window,
                "accessibility": accessibility_audit}
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as work:
            try:
                only[args.only](args.app, args.standin, work)
            except BaseException:
                print(f"e2e: {harness.passed} passed, 1 failed", flush=True)
                raise
        print(f"e2e: {harness.passed} passed, 0 failed", flush=True)
        return
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as work:
        clicks = ClickRecorder(work)
        notifications = NotificationServer(work)
        app = None
        try:
            app = App(args.app, args.standin, script(), work)
            run(app, args.app, clicks, notifications, args.screenshot)
            app.close()
            app = None
            stall_dir = os.path.join(work, "stall")
            os.makedirs(stall_dir)
            stall_question(args.app, args.standin, stall_dir)
            responses_dir = os.path.join(work, "responses")
            os.makedirs(responses_dir)
            responses_safety_check(args.app, args.standin, responses_dir, clicks)
            elements_dir = os.path.join(work, "elements")
            os.makedirs(elements_dir)
            approval_names_the_target(args.app, args.standin, elements_dir)
            behind_dir = os.path.join(work, "behind")
            os.makedirs(behind_dir)
            apps_behind_the_window(args.app, args.standin, behind_dir)
            audit_dir = os.path.join(work, "accessibility")
            os.makedirs(audit_dir)
            accessibility_audit(args.app, args.standin, audit_dir)
        except BaseException:
            print(f"e2e: {harness.passed} passed, 1 failed", flush=True)
            if app:
                app.dump_logs()
            raise
        finally:
            if app:
                app.close()
            clicks.close()
            notifications.close()
    print(f"e2e: {harness.passed} passed, 0 failed", flush=True)


if __name__ == "__main__":
    main()
