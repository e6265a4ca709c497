#!/usr/bin/env bash
# Starts MariaDB and RabbitMQ when they are down (installing them on a bare Debian machine), and
# waits until both accept connections. Safe to run any number of times; used by `npm test`,
# `npm run demo`, `npm run bench` and .ci/run.
set -euo pipefail

log() { printf '[services] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else "$@"; fi; }

mysql_up() { mysqladmin --protocol=tcp -h127.0.0.1 -uroot ping >/dev/null 2>&1 || mariadb-admin --protocol=tcp -h127.0.0.1 -uroot ping >/dev/null 2>&1; }
rabbit_up() { (exec 3<>/dev/tcp/127.0.0.1/5672) >/dev/null 2>&1; }

wait_for() { # name check seconds
  local name=$1 check=$2 secs=$3 i
  for ((i = 0; i < secs * 4; i++)); do
    if $check; then return 0; fi
    sleep 0.25
  done
  log "$name did not come up within ${secs}s"
  return 1
}

if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  log "installing mariadb-server"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
fi
if ! command -v rabbitmq-server >/dev/null 2>&1 && [ ! -x /usr/sbin/rabbitmq-server ]; then
  log "installing rabbitmq-server"
  as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server >/dev/null
fi

if ! mysql_up; then
  log "starting MariaDB"
  as_root mkdir -p /run/mysqld && as_root chown mysql:mysql /run/mysqld 2>/dev/null || true
  as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
  wait_for MariaDB mysql_up 60
fi
# root over TCP with an empty password (a fresh Debian install only allows the unix socket).
if ! mysql --protocol=tcp -h127.0.0.1 -uroot -e 'SELECT 1' >/dev/null 2>&1; then
  log "allowing root over TCP"
  as_root mysql -uroot -e "ALTER USER root@localhost IDENTIFIED VIA mysql_native_password USING PASSWORD('') OR unix_socket; FLUSH PRIVILEGES;"
fi

if ! rabbit_up; then
  log "starting RabbitMQ"
  as_root rabbitmq-server -detached >/dev/null 2>&1 || true
  wait_for RabbitMQ rabbit_up 120
  # The port opens before the broker accepts AMQP logins; wait for the app itself.
  as_root timeout 120 rabbitmqctl await_startup >/dev/null 2>&1 || true
fi
log "MariaDB and RabbitMQ are up"
