#!/usr/bin/env bash
# Builds Deskhand (installing what building and running need on Debian/Ubuntu, nothing the
# tests need: scripts/apt/build.txt) and starts the desktop app.
# With arguments, runs the headless CLI instead: scripts/start.sh ask "open a terminal".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
echo "start: building the window's frontend" >&2
(cd ui && npm ci --no-audit --no-fund --silent && npm run --silent build)
echo "start: building (release)" >&2
cargo build --release --locked --features deskhand-app/custom-protocol
if [ $# -gt 0 ]; then
  exec target/release/deskhand "$@"
fi
exec target/release/deskhand-app
