#!/usr/bin/env bash
# Measures the desktop app (start time, idle memory, stop and streaming latency, scrolling a
# big session) on a virtual display of its own, inside a private D-Bus session, and prints
# medians. Builds the frontend and the debug app first. What each figure means:
# tests/e2e/measure.py.
# Usage: scripts/measure.sh [--runs N] [--only start,memory,stop,token,scroll] [--release]
#   MEASURE_DISPLAY=:96 by default (a display number nothing else uses).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export PATH="$CARGO_HOME/bin:$PATH"
profile=debug
args=()
for arg in "$@"; do
  if [ "$arg" = --release ]; then profile=release; else args+=("$arg"); fi
done
(cd ui && npm ci --no-audit --no-fund && npm run build)
build=(cargo build --locked --features deskhand-app/custom-protocol -p deskhand-app -p deskhand-standin)
[ "$profile" = release ] && build+=(--release)
"${build[@]}"
command -v tauri-driver >/dev/null 2>&1 || cargo install --locked --quiet tauri-driver@2.1.0

work=$(mktemp -d)
cleanup() { kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
export DISPLAY="${MEASURE_DISPLAY:-:96}"
source scripts/display.sh
start_display "$work"
mkdir -p "$work/home"
HOME="$work/home" dbus-run-session -- bash -c '
  echo -n measure | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  exec python3 tests/e2e/measure.py "$@"
' bash "target/$profile/deskhand-app" "target/$profile/deskhand-standin" ${args[@]+"${args[@]}"}
