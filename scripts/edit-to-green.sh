#!/usr/bin/env bash
# Measures how long an edit in one crate takes to a green run of that crate's tests: changes a
# line of FILE (TEXT becomes "TEXT (edit N)", a code change), runs `cargo test -q -p CRATE`,
# restores the file, three times after one warm-up run, and prints each time and the median.
# Usage: scripts/edit-to-green.sh CRATE FILE TEXT
#   e.g. scripts/edit-to-green.sh deskhand-store crates/store/src/error.rs 'the session id is empty'
set -euo pipefail
cd "$(dirname "$0")/.."
crate=$1 file=$2 text=$3
grep -qF -- "$text" "$file" || { echo "edit-to-green: $file does not contain: $text" >&2; exit 2; }
original=$(mktemp)
cp "$file" "$original"
trap 'cp "$original" "$file"; rm -f "$original"' EXIT
echo "edit-to-green: warm-up run of $crate" >&2
cargo test -q --locked -p "$crate" >/dev/null
times=()
for n in 1 2 3; do
  TEXT="$text" N="$n" perl -0pi -e 's/\Q$ENV{TEXT}\E/$ENV{TEXT} (edit $ENV{N})/' "$file"
  started=$(date +%s%N)
  cargo test -q --locked -p "$crate" >/dev/null
  ended=$(date +%s%N)
  cp "$original" "$file"
  times+=("$(awk -v ns=$((ended - started)) 'BEGIN { printf "%.1f", ns / 1e9 }')")
  echo "$crate edit $n: ${times[-1]} s"
done
echo "$crate median: $(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p) s"
