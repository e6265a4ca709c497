#!/usr/bin/env bash
# Installs the Debian tools the tests use when they are missing: promtool (package prometheus) checks
# the metrics and unit-tests the alert rules, tmux is the real terminal of `ax top`'s end-to-end test,
# chromium is the headless browser of the console's end-to-end tests (driven by playwright-core;
# never a browser download), gnuplot draws the fault soak's memory and latency curves (test/faults),
# faketime (libfaketime) runs the ax processes of the clock-skew fault scenario with a shifted wall
# clock (test/faults/clock-skew.test.ts, test/helpers/faketime.ts).
# Needs root (CI runs as root); otherwise it says what to install and leaves the decision to you.
set -euo pipefail
missing=()
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v gnuplot >/dev/null 2>&1 || missing+=(gnuplot-nox)
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "[setup] missing Debian packages: ${missing[*]} (run: sudo apt-get install -y ${missing[*]})" >&2
  exit 1
fi
echo "[setup] installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
