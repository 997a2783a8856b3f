#!/usr/bin/env bash
# Builds Deskhand (installing what it needs on Debian/Ubuntu) and starts it.
# Until the desktop window lands, "the app" is the `deskhand` CLI: arguments go to it, and
# without any it asks for a prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
echo "start: building (release)" >&2
cargo build --release --workspace --locked
if [ $# -eq 0 ]; then
  read -r -p "Ask Deskhand: " prompt
  set -- ask "$prompt"
fi
exec target/release/deskhand "$@"
