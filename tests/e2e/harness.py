"""What the end-to-end test and the measurements share: the app started over WebDriver
(tauri-driver + WebKitWebDriver) against the stand-in model server, in a home of its own."""

import json
import os
import socket
import subprocess
import sys
import time

from webdriver import Session

KEY = "sk-ant-e2e-test-1234"
# A 1920x1080 screen is shown to the model at 1366x768 (the computer tool's FWXGA target).
SCREEN = (1920, 1080)
MODEL = (1366, 768)


passed = 0


def check(name, condition, detail="", show=True):
    """Counts and prints a passed check (with `detail` if `show`); a failed one raises
    AssertionError with `detail`."""
    global passed
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    passed += 1
    print(f"ok - {name}" + (f" ({detail})" if detail and show else ""), flush=True)


def scale(value, to, frm):
    """`value * to / frm` rounded half up, as the computer tool maps coordinates."""
    return (value * to * 2 + frm) // (frm * 2)


def model_point(point):
    return tuple(scale(v, m, s) for v, m, s in zip(point, MODEL, SCREEN))


def screen_point(point):
    return tuple(scale(v, s, m) for v, m, s in zip(point, MODEL, SCREEN))


def display_size():
    out = subprocess.run(["xdotool", "getdisplaygeometry"], capture_output=True, text=True,
                         check=True).stdout.split()
    return int(out[0]), int(out[1])


def text_reply(text, delay_ms=0, hang_after=None):
    """A stand-in turn: one text block, streamed `delay_ms` apart per event."""
    reply = {"kind": "reply", "content": [{"type": "text", "text": text}],
             "chunk_delay_ms": delay_ms}
    if hang_after is not None:
        reply["hang_after_events"] = hang_after
    return reply


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


def start_standin(binary, script, work):
    """The stand-in serving `script`; returns (process, url)."""
    path = os.path.join(work, "script.json")
    with open(path, "w") as f:
        json.dump(script, f)
    process = subprocess.Popen([binary, "--script", path], stdout=subprocess.PIPE)
    line = process.stdout.readline().decode().strip()
    if not line.startswith("listening on "):
        process.kill()
        raise AssertionError(f"the stand-in did not start: {line!r}")
    return process, line.removeprefix("listening on ")


def app_env(work, model_url, settings=None):
    """The app's environment: a home, config and data of its own under `work`, the key and
    the model server from the environment. `settings` (a dict) becomes its settings.json."""
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    if settings is not None:
        os.makedirs(f"{work}/config", exist_ok=True)
        with open(f"{work}/config/settings.json", "w") as f:
            json.dump(settings, f)
    return dict(os.environ, HOME=home, XDG_CONFIG_HOME=f"{home}/.config",
                XDG_DATA_HOME=f"{home}/.local/share", XDG_CACHE_HOME=f"{home}/.cache",
                DESKHAND_CONFIG_DIR=f"{work}/config", DESKHAND_DATA_DIR=f"{work}/data",
                ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=model_url,
                # For a window set to OpenAI: the stand-in serves /v1/responses too.
                OPENAI_API_KEY=KEY, OPENAI_BASE_URL=f"{model_url}/v1")


def process_tree(binary):
    """Pids of every process running `binary` and all their descendants."""
    parents = {}
    roots = []
    real = os.path.realpath(binary)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
            if os.path.realpath(f"/proc/{pid}/exe") == real:
                roots.append(int(pid))
        except OSError:
            pass
    children = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def gl_drivers(pid):
    """The GL driver files (Mesa's *_dri.so, libLLVM) mapped into process `pid`."""
    with open(f"/proc/{pid}/maps") as f:
        paths = {line.split(maxsplit=5)[-1].strip() for line in f if "/" in line}
    return sorted(p for p in paths if p.endswith("_dri.so") or "/libLLVM" in p)


class App:
    """The stand-in, tauri-driver, and one WebDriver session of the app. `proxy(url)` may put
    something between the app and the stand-in and return the URL the app should use."""

    def __init__(self, app_binary, standin_binary, script, work, settings=None, proxy=None):
        self.processes = []
        self.session = None
        self.work = work
        standin, url = start_standin(standin_binary, script, work)
        self.processes.append(standin)
        env = app_env(work, proxy(url) if proxy else url, settings)
        port = native_port = free_port()
        while native_port == port:  # a port just freed may be handed out again
            native_port = free_port()
        self.driver_log = os.path.join(work, "tauri-driver.log")
        self.processes.append(subprocess.Popen(
            ["tauri-driver", "--port", str(port), "--native-port", str(native_port)], env=env,
            stdout=open(self.driver_log, "w"), stderr=subprocess.STDOUT))
        try:
            # tauri-driver starts WebKitWebDriver on the native port and passes each request
            # on; asked before that one listens, it drops the connection unanswered.
            wait_port(port)
            wait_port(native_port)
            self.session = Session(f"http://127.0.0.1:{port}", os.path.abspath(app_binary))
        except BaseException:
            # No session: say why, and leave no server behind (nor a pipe held open).
            self.dump_logs()
            self.close()
            raise

    def send(self, text):
        box = self.session.wait_for('textarea[aria-label="Message text"]')
        box.send_keys(text)
        box.send_keys("\ue007")  # Enter sends

    def dump_logs(self):
        """tauri-driver's log holds the app's and WebKit's stderr: shown when a test fails."""
        with open(self.driver_log, errors="replace") as f:
            print(f"--- {self.driver_log} (last 60 lines)", *f.readlines()[-60:], sep="",
                  file=sys.stderr)

    def close(self):
        if self.session:
            self.session.close()
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
