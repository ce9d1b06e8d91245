#!/usr/bin/env bash
# What compaction costs (doc/compaction.md, "Measured"): three release brokers from
# scripts/cluster.sh in a temporary GREGOR_HOME, then
#   1. the disk ceiling of this machine (gregor perf ceiling, CBENCH_GB of sequential write);
#   2. CBENCH_GB (default 1) GB of 100-byte values with CBENCH_KEYS (default 1,000,000) keys
#      produced into each of topics `dirty-1` … `dirty-N` (N = CBENCH_PAIRS, default 2; one
#      partition on broker 1, cleanup.policy=delete, 64 MiB segments), broker 1's peak RSS
#      (VmHWM) noted;
#   3. N pairs, alternated: acks=all end-to-end latency through librdkafka at 10,000 msg/s for
#      10 s on topic `lat` (replication factor 3) with the cleaner idle; then `dirty-i`
#      switched to cleanup.policy=compact and the same run at once, while the cleaner cleans it;
# then each clean's own log line (bytes read and written, time), broker 1's peak RSS after
# them beside log.cleaner.dedupe.buffer.size, and each pair's p99 ratio.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/.."
ensure_packages zookeeper
ensure_python_clients
cargo build --release --quiet
G=$PWD/target/release/gregor
py=$PYTHON_VENV/bin/python
gb=${CBENCH_GB:-1}
keys=${CBENCH_KEYS:-1000000}
pairs=${CBENCH_PAIRS:-2}
export GREGOR_HOME
GREGOR_HOME=$(mktemp -d /tmp/gregor-cbench.XXXXXX)
export ZK_PORT=${ZK_PORT:-42181} BASE_PORT=${BASE_PORT:-49092} METRICS_BASE_PORT=off GREGOR_BIN=$G
export BROKER_PROPERTIES="log.cleaner.backoff.ms=500"
cleanup() { "$here/cluster.sh" stop >/dev/null 2>&1 || true; rm -rf "$GREGOR_HOME"; }
trap cleanup EXIT
"$here/cluster.sh" start 3 >/dev/null
zk=127.0.0.1:$ZK_PORT/gregor
b=127.0.0.1:$BASE_PORT
echo "== disk ceiling"
"$G" perf ceiling --bytes $((gb * 1000000000)) --dir "$GREGOR_HOME" | grep -i disk
"$G" topics --zookeeper "$zk" --create --topic lat --replica-assignment 1:2:3 >/dev/null
messages=$((gb * 1000000000 / 130))
for i in $(seq 1 "$pairs"); do
  "$G" topics --zookeeper "$zk" --create --topic "dirty-$i" --replica-assignment 1 \
    --config cleanup.policy=delete --config segment.bytes=67108864 >/dev/null
  echo "== producing $messages keyed messages ($keys keys) into dirty-$i"
  "$G" perf produce -b "$b" --topic "dirty-$i" --messages "$messages" --size 100 --keys "$keys" \
    --batch-size 500 | tail -1
done
pid=$(cat "$GREGOR_HOME/broker-1/pid")
hwm() { grep VmHWM "/proc/$pid/status" | awk '{print $2 / 1024 " MiB"}'; }
echo "broker 1 peak RSS before cleaning: $(hwm)"
latency() {
  "$py" scripts/e2e_latency.py c "$b" lat 10000 10 all >"$GREGOR_HOME/c.txt" &
  local c=$!
  sleep 2
  "$py" scripts/e2e_latency.py p "$b" lat 10000 10 all >/dev/null
  wait "$c"
  cat "$GREGOR_HOME/c.txt"
}
p99() { sed -E 's/.* p99 ([0-9.]+) .*/\1/'; }
for i in $(seq 1 "$pairs"); do
  echo "== pair $i: acks=all e2e at 10,000 msg/s, cleaner idle"
  idle=$(latency); echo "$idle"
  "$G" topics --zookeeper "$zk" --alter --topic "dirty-$i" --config cleanup.policy=compact >/dev/null
  echo "== pair $i: the same while the cleaner cleans dirty-$i"
  during=$(latency); echo "$during"
  for _ in $(seq 1 600); do
    grep -q "\[dirty-$i-0\] cleaned" "$GREGOR_HOME/broker-1/broker.log" && break
    sleep 1
  done
  grep "\[dirty-$i-0\] cleaned" "$GREGOR_HOME/broker-1/broker.log" | head -1
  awk -v a="$(echo "$idle" | p99)" -v b="$(echo "$during" | p99)" \
    'BEGIN { printf "pair p99 while cleaning / idle: %.2f (%s / %s ms)\n", b / a, b, a }'
done
echo "broker 1 peak RSS after cleaning: $(hwm) (log.cleaner.dedupe.buffer.size 128 MiB)"
