# Sourced by test.sh and measure.sh: `start_display WORKDIR` starts a virtual X display on
# $DISPLAY (1920x1080, Xvfb) with a window manager, as background jobs of the caller, logging
# into WORKDIR.
start_display() {
  local work=$1
  # -noreset: the test programs (xdotool, xev, xcap's fallback capture) connect and leave all
  # the time, and a server reset between two of them makes the next one fail now and then.
  Xvfb "$DISPLAY" -screen 0 1920x1080x24 -noreset -nolisten tcp >"$work/xvfb.log" 2>&1 &
  for _ in $(seq 50); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
  xdpyinfo >/dev/null 2>&1 || { echo "Xvfb did not start on $DISPLAY:" >&2; cat "$work/xvfb.log" >&2; return 1; }
  # A window manager, so focus stays where a click put it, as on a real desktop.
  HOME="$work" openbox >"$work/openbox.log" 2>&1 &
}
