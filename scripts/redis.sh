#!/usr/bin/env bash
# Starts the local Redis when it is down (installing it on a bare Debian machine) and waits until it
# answers. Only the benchmark suite needs it (the BullMQ peer; bench/run.js calls this script when
# a BullMQ workload is selected). Started like the machine's own Redis: WITHOUT persistence
# (--save "" --appendonly no), so the BullMQ figures are those of a non-durable queue.
set -euo pipefail

log() { printf '[redis] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else "$@"; fi; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }

if ! command -v redis-server >/dev/null 2>&1; then
  log "installing redis-server"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
if ! redis_up; then
  log "starting Redis (no persistence)"
  as_root mkdir -p /var/lib/redis /var/log/redis
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 120); do
    if redis_up; then break; fi
    sleep 0.25
  done
  redis_up || { log "Redis did not come up within 30s"; exit 1; }
fi
log "Redis is up"
