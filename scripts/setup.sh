#!/usr/bin/env bash
# Makes a fresh checkout runnable: installs the locked dependencies when they are missing or
# stale, starts MariaDB and RabbitMQ when they are down, and builds dist/ when it is not current.
# Used by `npm test`, `npm run demo` and `npm run bench`, so each of them works on a fresh machine
# by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[setup] installing dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
fi
bash scripts/services.sh
# The tests' Debian tools (promtool, tmux): only for `npm test` (--tools); the demo and the bench
# do not need them, so a machine without them (or without root) can still run those.
if [ "${1:-}" = "--tools" ]; then bash scripts/tools.sh; fi
# Built aside and moved in file by file (scripts/build.mjs): dist/ never disappears under the other
# ax processes of the checkout; skipped when nothing changed since the last build. Files of moved
# or deleted sources are removed, so none lingers (or is packed).
node scripts/build.mjs --if-stale
# The console's UI (ui/, built by Vite into dist-web/), when Vite is installed (a development checkout).
if [ -d node_modules/vite ]; then node scripts/build-ui.mjs --if-stale; fi
