#!/usr/bin/env bash
# What a dynamic broker configuration change costs a loaded cluster (doc/configuration.md,
# "Measured"): three release brokers from scripts/cluster.sh in a temporary GREGOR_HOME, topic
# `lat` (replication factor 3), then DBENCH_PAIRS (default 3) alternated pairs of
# `gregor perf e2e --acks -1` at DBENCH_RATE msg/s (default 10,000) for DBENCH_SECONDS (default
# 20): one quiet, one while the cluster-wide default `log.retention.bytes` is changed every
# 200 ms (each change: IncrementalAlterConfigs, a ZooKeeper write and notice, every broker
# reading both layers again and handing the new configuration to its logs, replication and
# connection limits). Prints each run's line and each pair's p99 and p99.9 ratio (changing /
# quiet). DBENCH_ACTION=describe runs the same client loop with `--describe` instead, which
# changes nothing: the control for what the tool's own processes cost a 2-core machine.
# DBENCH_INTERVAL (default 0.2) is the pause between changes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/.."
ensure_packages zookeeper
cargo build --release --quiet
G=$PWD/target/release/gregor
pairs=${DBENCH_PAIRS:-3}
rate=${DBENCH_RATE:-10000}
secs=${DBENCH_SECONDS:-20}
action=${DBENCH_ACTION:-alter}
interval=${DBENCH_INTERVAL:-0.2}
export GREGOR_HOME
GREGOR_HOME=$(mktemp -d /tmp/gregor-dbench.XXXXXX)
export ZK_PORT=${ZK_PORT:-43181} BASE_PORT=${BASE_PORT:-48092} METRICS_BASE_PORT=off GREGOR_BIN=$G
cleanup() { "$here/cluster.sh" stop >/dev/null 2>&1 || true; rm -rf "$GREGOR_HOME"; }
trap cleanup EXIT
"$here/cluster.sh" start 3 >/dev/null
b=127.0.0.1:$BASE_PORT
"$G" topics --zookeeper "127.0.0.1:$ZK_PORT/gregor" --create --topic lat --replica-assignment 1:2:3 >/dev/null
e2e() { "$G" perf e2e -b "$b" --topic lat --rate "$rate" --seconds "$secs" --acks -1; }
changes() {
  local n=0
  while :; do
    if [ "$action" = describe ]; then
      "$G" configs -b "$b" --broker 1 --describe --all >/dev/null
    else
      "$G" configs -b "$b" --broker-defaults --alter \
        --add-config "log.retention.bytes=$((1000000000 + n % 2))" >/dev/null
    fi
    n=$((n + 1))
    echo "$n" >"$GREGOR_HOME/changes"
    sleep "$interval"
  done
}
field() { sed -E "s/.* $1 ([0-9.]+).*/\\1/"; }
e2e >/dev/null # warm-up
for i in $(seq 1 "$pairs"); do
  quiet=$(e2e)
  echo "pair $i quiet:    $quiet"
  changes &
  loop=$!
  busy=$(e2e)
  kill "$loop"; wait "$loop" 2>/dev/null || true
  echo "pair $i $action: $busy ($(cat "$GREGOR_HOME/changes") runs of the tool)"
  for q in p99 p99.9; do
    a=$(echo "$quiet" | field "$q"); c=$(echo "$busy" | field "$q")
    echo "pair $i $q: quiet $a ms, $action $c ms, ratio $(awk -v a="$a" -v c="$c" 'BEGIN { printf "%.2f", c / a }')"
  done
done
