#!/usr/bin/env bash
# Installs what Deskhand needs on Debian/Ubuntu: system packages (apt), and Rust if it is missing.
# Idempotent and quiet when everything is there already.
# Usage: scripts/setup.sh [package] [test]
#   always the packages building and running need (scripts/apt/build.txt); `package` adds
#   those making the .deb and the AppImage need, `test` those only the tests need.
set -euo pipefail
cd "$(dirname "$0")/.."

lists=(scripts/apt/build.txt)
for arg in "$@"; do
  case $arg in
    package | test) lists+=("scripts/apt/$arg.txt") ;;
    *) echo "usage: scripts/setup.sh [package] [test]" >&2; exit 2 ;;
  esac
done

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

mapfile -t packages < <(sed -e 's/#.*//' -e '/^\s*$/d' "${lists[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} system packages: ${missing[*]}" >&2
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's nodejs comes without npm; NodeSource's includes it and conflicts with Debian's npm.
if ! command -v npm >/dev/null 2>&1; then
  echo "setup: installing npm" >&2
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends npm >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] || {
    echo "setup: installing Rust with rustup" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  }
fi
