#!/usr/bin/env bash
# The acks=all rate sweep through librdkafka (scripts/e2e_latency.py) for one or more gregor
# builds in turn, each on a fresh 3-broker cluster (scripts/cluster.sh in its own GREGOR_HOME):
# one partition, replication factor 3, 100-byte messages, 5 s per rate.
#   scripts/e2e_sweep.sh LABEL=BINARY [LABEL=BINARY ...]
#   RATES (default "1000 5000 10000 20000 50000") messages a second.
# Prints one line per build and rate: LABEL rate R acks all n N p50 .. p99 .. p99.9 .. max .. ms
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
. "$here/lib.sh"
ensure_python_clients
py=$PYTHON_VENV/bin/python
[ $# -gt 0 ] || { echo "usage: $0 LABEL=BINARY ..." >&2; exit 1; }
export GREGOR_HOME
GREGOR_HOME=$(mktemp -d /tmp/gregor-sweep.XXXXXX)
export METRICS_BASE_PORT=off
cleanup() { "$here/cluster.sh" stop >/dev/null 2>&1 || true; rm -rf "$GREGOR_HOME"; }
trap cleanup EXIT
out=$GREGOR_HOME/consumer.txt
for pair in "$@"; do
  label=${pair%%=*}
  export GREGOR_BIN=${pair#*=}
  cleanup
  mkdir -p "$GREGOR_HOME"
  "$here/cluster.sh" start 3 >/dev/null
  "$GREGOR_BIN" topics --zookeeper "127.0.0.1:${ZK_PORT:-2181}/gregor" --create --topic lat \
    --replica-assignment 1:2:3 >/dev/null
  for rate in ${RATES:-1000 5000 10000 20000 50000}; do
    "$py" scripts/e2e_latency.py c "127.0.0.1:${BASE_PORT:-9092}" lat "$rate" 5 all >"$out" &
    consumer=$!
    sleep 2 # the consumer is assigned before the first message
    "$py" scripts/e2e_latency.py p "127.0.0.1:${BASE_PORT:-9092}" lat "$rate" 5 all >/dev/null
    wait "$consumer"
    echo "$label $(cat "$out")"
  done
done
