#!/bin/sh
# The container's entry point: a virtual display with a window manager, then `deskhand serve`
# on TCP behind its bearer token ($DESKHAND_API_TOKEN, from the Kubernetes Secret). Ends the
# display when the service ends, and the service on SIGTERM. See docs/deploy.md.
set -eu

if [ -z "${DESKHAND_API_TOKEN:-}" ]; then
  echo "entrypoint: DESKHAND_API_TOKEN is not set: the API must not listen without a token" >&2
  exit 64
fi
export DISPLAY="${DISPLAY:-:99}"
export HOME="${HOME:-/home/agent}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/deskhand-run}"
listen="${DESKHAND_LISTEN:-0.0.0.0:8765}"
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"

Xvfb "$DISPLAY" -screen 0 "${DESKHAND_SCREEN:-1280x800x24}" -noreset -nolisten tcp &
xvfb=$!
socket="/tmp/.X11-unix/X${DISPLAY#:}"
i=0
while [ ! -e "$socket" ]; do
  i=$((i + 1))
  if [ "$i" -gt 200 ] || ! kill -0 "$xvfb" 2>/dev/null; then
    echo "entrypoint: Xvfb did not start on $DISPLAY" >&2
    exit 69
  fi
  sleep 0.05
done
openbox --sm-disable >/dev/null 2>&1 &
wm=$!

deskhand serve --listen "$listen" &
serve=$!
stopping=
trap 'stopping=1; kill -TERM "$serve" 2>/dev/null' TERM INT
status=0
wait "$serve" || status=$?
# A trapped signal ends the first wait early: the service's own status comes from the next.
if [ -n "$stopping" ]; then
  status=0
  wait "$serve" || status=$?
fi
kill "$wm" "$xvfb" 2>/dev/null || true
wait 2>/dev/null || true
exit "$status"
