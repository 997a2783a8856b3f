#!/usr/bin/env python3
"""End-to-end test of the desktop app: the built binary on the test display, driven over
WebDriver (tauri-driver + WebKitWebDriver), talking to the stand-in model server.

Usage: tests/e2e/app_e2e.py APP_BINARY STANDIN_BINARY [OUT_DIR]
Needs DISPLAY (scripts/test.sh starts Xvfb and a window manager) and `tauri-driver` on PATH.
Writes a screenshot of the app mid-run to OUT_DIR (default: a temporary directory).
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webdriver import Session  # noqa: E402

KEY = "sk-ant-e2e-test-1234"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


def text_reply(*chunks, delay_ms=0, hang_after=None):
    reply = {"kind": "reply", "content": [{"type": "text", "text": "".join(chunks)}],
             "chunk_delay_ms": delay_ms}
    if hang_after is not None:
        reply["hang_after_events"] = hang_after
    return reply


SCRIPT = {
    "turns": [
        # 1. Streamed text, slowly enough to see it arrive.
        text_reply("Hello from **the stand-in**. " * 6, delay_ms=60),
        # 2. A stream that never ends: stopped from the window.
        text_reply("Working on it, step one", hang_after=5),
        # 3. The stopped session goes on.
        text_reply("Continued after the stop."),
    ]
}


class App:
    """The stand-in, tauri-driver, and one WebDriver session of the app."""

    def __init__(self, app_binary, standin_binary, work):
        self.processes = []
        script = os.path.join(work, "script.json")
        with open(script, "w") as f:
            json.dump(SCRIPT, f)
        standin = self.spawn([standin_binary, "--script", script], stdout=subprocess.PIPE)
        line = standin.stdout.readline().decode().strip()
        assert line.startswith("listening on "), line
        self.model_url = line.removeprefix("listening on ")
        home = os.path.join(work, "home")
        os.makedirs(home)
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=f"{home}/.config",
                   XDG_DATA_HOME=f"{home}/.local/share", XDG_CACHE_HOME=f"{home}/.cache",
                   DESKHAND_CONFIG_DIR=f"{work}/config", DESKHAND_DATA_DIR=f"{work}/data",
                   ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=self.model_url,
                   WEBKIT_DISABLE_COMPOSITING_MODE="1")
        port, native = free_port(), free_port()
        self.spawn(["tauri-driver", "--port", str(port), "--native-port", str(native)], env=env,
                   stdout=open(os.path.join(work, "tauri-driver.log"), "w"),
                   stderr=subprocess.STDOUT)
        wait_port(port)
        self.session = Session(f"http://127.0.0.1:{port}", os.path.abspath(app_binary))

    def spawn(self, argv, **kwargs):
        process = subprocess.Popen(argv, **kwargs)
        self.processes.append(process)
        return process

    def close(self):
        if getattr(self, "session", None):
            self.session.close()
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()

    def send(self, text):
        box = self.session.wait_for('textarea[aria-label="Message text"]')
        box.send_keys(text)
        box.send_keys("\ue007")  # Enter sends


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    print(f"ok - {name}", flush=True)


def main():
    app_binary, standin_binary = sys.argv[1], sys.argv[2]
    out = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp()
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        app = App(app_binary, standin_binary, work)
        try:
            s = app.session
            s.wait_for("h1", text="Deskhand", what="the window")

            app.send("Say hello")
            draft = s.wait_for('article[aria-label="Deskhand (typing)"]', text="Hello from",
                               what="streamed text")
            check("text streams in before the message is complete", "stand-in" in draft.text())
            final = s.wait_for('article[aria-label="Deskhand"]', text="Hello from the stand-in")
            check("the finished message renders Markdown", s.execute(
                "return document.querySelector('article[aria-label=\"Deskhand\"] strong')"
                "?.textContent") == "the stand-in", final.text())

            app.send("Keep going")
            s.wait_for('article[aria-label="Deskhand (typing)"]', text="Working on it")
            s.screenshot(os.path.join(out, "mid-run.png"))
            stop = s.wait_for("header button.stop")
            started = time.monotonic()
            stop.click()
            s.wait_for("p.note", text="Stopped.", what="the stopped note")
            check("Stop ends a run mid-stream", True, f"{time.monotonic() - started:.2f} s")
            check("the partial text is kept", s.wait_for('article[aria-label="Deskhand"]',
                                                         text="Working on it") is not None)

            app.send("Continue")
            s.wait_for('article[aria-label="Deskhand"]', text="Continued after the stop.")
            check("the stopped session continues", True)
        finally:
            app.close()


if __name__ == "__main__":
    main()
