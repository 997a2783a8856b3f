#!/usr/bin/env bash
# The whole test suite, headless: installs what it needs, starts a virtual X display (Xvfb with
# a window manager), a D-Bus session with an unlocked gnome-keyring, then runs every test.
# Usage: scripts/test.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."
# Everything: building, packaging (the package checks below) and the test-only packages.
scripts/setup.sh package test
# The window's frontend: lint, type-check and component tests (Vitest, jsdom, Tauri IPC mocks),
# then the build the app embeds.
(cd ui && npm ci --no-audit --no-fund && npm run lint && npm run check && npm test && npm run build)
# HOME changes below for isolation; cargo and rustup must keep theirs.
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export PATH="$CARGO_HOME/bin:$PATH"

# Build once, up front, so that the timed parts below measure tests, not compiles. The app
# embeds ui/dist (feature custom-protocol); every cargo command below uses the same features
# so that nothing is built twice.
features=(--features deskhand-app/custom-protocol)
echo "test: building" >&2
cargo build --workspace --all-targets --locked "${features[@]}"
# The fuzz pass: the SSE splitter and both stream decoders, the computer tool's input and key
# names, and the session importer, each with far more cases than the default run below gives
# them (proptest; its time: docs/benchmarks.md). A failing case is kept in the target's
# proptest-regressions file, to be committed, and is tried first from then on.
echo "test: fuzz pass" >&2
PROPTEST_CASES=20000 cargo test --workspace --locked "${features[@]}" --test all fuzz_streams::
PROPTEST_CASES=40000 cargo test --workspace --locked "${features[@]}" --test all fuzz_tool_input::
PROPTEST_CASES=150 cargo test --workspace --locked "${features[@]}" --test all fuzz_import::
# The end-to-end test drives the app over WebDriver: tauri-driver (from crates.io, pinned, built
# once into $CARGO_HOME/bin) in front of WebKitWebDriver (Debian's webkit2gtk-driver).
command -v tauri-driver >/dev/null 2>&1 || cargo install --locked --quiet tauri-driver@2.1.0

# A real MCP server no one here wrote, for the plugin tests: the reference `mcp-server-time`
# from PyPI, pinned, in a venv of its own under target/ (made once, then reused; no pip cache).
mcp_venv="$PWD/target/test-venvs/mcp-server-time-2026.10.19"
if ! "$mcp_venv/bin/mcp-server-time" --help >/dev/null 2>&1; then
  echo "test: installing mcp-server-time into $mcp_venv" >&2
  rm -rf "$mcp_venv"
  python3 -m venv "$mcp_venv"
  "$mcp_venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check mcp-server-time==2026.10.19
fi
export DESKHAND_MCP_TIME="$mcp_venv/bin/mcp-server-time"

# The local API's third-party clients, pinned, in a venv of their own: httpx-sse (an SSE client
# for crates/cli/tests/suite/serve.rs) and schemathesis (fuzzes `deskhand serve` from docs/openapi.json).
api_venv="$PWD/target/test-venvs/api-clients-4.32.5"
if ! "$api_venv/bin/python" -c 'import httpx_sse, schemathesis' >/dev/null 2>&1; then
  echo "test: installing httpx-sse and schemathesis into $api_venv" >&2
  rm -rf "$api_venv"
  python3 -m venv "$api_venv"
  "$api_venv/bin/pip" install --quiet --no-cache-dir --disable-pip-version-check \
    httpx==0.28.1 httpx-sse==0.4.3 schemathesis==4.32.5
fi
export DESKHAND_API_PYTHON="$api_venv/bin/python"

work=$(mktemp -d)
cleanup() { kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# A real X server with a window manager.
export DISPLAY=:97
source scripts/display.sh
start_display "$work"

export DESKHAND_TEST_DISPLAY=1
# The element map's tests (GTK fixture, AT-SPI, Tesseract): here a missing package is a failure.
export DESKHAND_TEST_ELEMENTS=1
# The Wayland tests run on a headless sway of their own; here a missing sway is a failure.
export DESKHAND_TEST_WAYLAND=1
# So do the portal tests on a headless mutter with PipeWire and xdg-desktop-portal.
export DESKHAND_TEST_PORTAL=1
# A third-party OpenAI-compatible server for the provider tests: fakellm from PyPI, in a venv
# of its own. With DESKHAND_FAKELLM set, those tests fail rather than skip if it does not work.
python3 -m venv "$work/fakellm"
"$work/fakellm/bin/pip" install --quiet --disable-pip-version-check fakellm==0.3.5
export DESKHAND_FAKELLM="$work/fakellm/bin/fakellm"
# Everything runs inside a private D-Bus session with an unlocked Secret Service, and a
# HOME of its own so nothing touches the developer's keyring or data.
export DESKHAND_TEST_HOME="$work/home"
mkdir -p "$DESKHAND_TEST_HOME"
HOME="$DESKHAND_TEST_HOME" dbus-run-session -- bash -c '
  set -euo pipefail
  echo -n deskhand-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  # The element map answers within deadlines (an app has 500 ms to hand over its tree), so
  # its tests run after the rest, not beside a busy test on 2 cores.
  cargo test --workspace --locked --features deskhand-app/custom-protocol "$@" -- --skip suite::elements::
  cargo test --workspace --locked --features deskhand-app/custom-protocol --test all suite::elements::
  echo "test: schemathesis against deskhand serve (30 s)" >&2
  scripts/fuzz-api.sh "$(dirname "$DESKHAND_API_PYTHON")" target/debug/deskhand 30
  echo "test: end-to-end (the app over WebDriver; it also redraws docs/screenshot.png)" >&2
  python3 tests/e2e/app_e2e.py target/debug/deskhand-app target/debug/deskhand-standin \
    --screenshot docs/screenshot.png
  echo "test: packages (the .deb and the AppImage of the debug build, run on the display)" >&2
  packages=$(scripts/package.sh --debug --no-build)
  python3 tests/packaging/check_packages.py $packages target/debug/deskhand-app \
    target/debug/deskhand
' bash "$@"
