#!/usr/bin/env bash
# A 3-node RabbitMQ cluster of its own on this machine, to try ax against a cluster by hand (the
# fault test test/faults/rabbit-cluster.test.ts starts the same one): own node names, ports, data
# and Erlang cookie under a temporary directory; the machine's own RabbitMQ is not touched. It prints
# the AX_AMQP_URL listing the three nodes, then reads commands on stdin until `quit` (or Ctrl-D/C),
# and removes everything on the way out:
#   kill N     kill -9 node N (1-3)          start N   boot node N again (it rejoins)
#   status     running nodes, ax's queues and their replicas, memory per node
# Needs Debian's rabbitmq-server package (/usr/lib/rabbitmq); about 130 MB of memory per node.
#   bash scripts/rabbit-cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --import tsx test/helpers/rabbit-cluster-shell.ts
