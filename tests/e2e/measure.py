#!/usr/bin/env python3
"""Measures the desktop app: cold start to an interactive window, and idle memory of all its
processes (the app, WebKit's web and network processes). Prints medians.

Usage: tests/e2e/measure.py APP_BINARY [RUNS]   (needs DISPLAY and tauri-driver, as app_e2e.py)

Cold start: from asking for a WebDriver session (which launches the app) until the page's
heading is found, i.e. the window is up and its script has rendered. WebKitWebDriver's own
start is included, so this is an upper bound. Memory: 5 s after start, the sum over the app's
process tree of PSS (shared pages split between processes) and of RSS, from /proc.
"""

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webdriver import Session  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children():
    tree = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        tree.setdefault(ppid, []).append(int(pid))
    return tree


def app_tree(binary):
    tree = children()
    roots = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(binary):
                roots.append(int(pid))
        except OSError:
            pass
    found, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(tree.get(pid, []))
    return found


def memory_kb(pids):
    pss = rss = 0
    names = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
                    elif line.startswith("Rss:"):
                        rss += int(line.split()[1])
            with open(f"/proc/{pid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return pss, rss, names


def main():
    binary = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    starts, psss, rsss = [], [], []
    with tempfile.TemporaryDirectory() as work:
        env = dict(os.environ, HOME=work, DESKHAND_CONFIG_DIR=f"{work}/config",
                   DESKHAND_DATA_DIR=f"{work}/data", ANTHROPIC_API_KEY="sk-ant-measure-0000",
                   ANTHROPIC_BASE_URL="http://127.0.0.1:9", WEBKIT_DISABLE_COMPOSITING_MODE="1")
        port = free_port()
        driver = subprocess.Popen(["tauri-driver", "--port", str(port), "--native-port",
                                   str(free_port())], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            time.sleep(1)
            for _ in range(runs):
                started = time.monotonic()
                session = Session(f"http://127.0.0.1:{port}", binary)
                try:
                    session.wait_for("h1", text="Deskhand")
                    starts.append(time.monotonic() - started)
                    time.sleep(5)
                    pss, rss, names = memory_kb(app_tree(binary))
                    psss.append(pss / 1024)
                    rsss.append(rss / 1024)
                finally:
                    session.close()
                time.sleep(1)
        finally:
            driver.terminate()
            driver.wait()
    print(f"processes: {', '.join(names)}")
    print(f"cold start to interactive window: median {statistics.median(starts):.2f} s "
          f"(runs: {', '.join(f'{s:.2f}' for s in starts)})")
    print(f"idle memory, all processes: median PSS {statistics.median(psss):.0f} MB, "
          f"RSS {statistics.median(rsss):.0f} MB over {runs} runs")


if __name__ == "__main__":
    main()
