#!/usr/bin/env bash
# What transactions cost (doc/transactions.md, "Measured"): three release brokers from
# scripts/cluster.sh in a temporary GREGOR_HOME (__transaction_state with replication 3,
# min.insync.replicas 2), topic `tb` (3 partitions, replication 3), then through librdkafka:
#   1. TBENCH_ROUNDS (default 2) rounds, each alternating an idempotent producer with
#      transactional ones committing every 1, 100 and 10,000 messages (TBENCH_N messages of
#      100 bytes, default 1,000,000; a hundredth for transactions of 1, a fifth for those of
#      100), connections made before the timing starts — each as a ratio to the idempotent
#      run of its round;
#   2. end-to-end latency of a read_committed reader at 10,000 msg/s with 100 ms transactions;
#   3. TBENCH_OPEN (default 1,000) transactions left open by abandoned producers (timeout
#      TBENCH_OPEN_TIMEOUT_MS, default 240,000, longer than opening them all takes), then
#      broker 1 killed with kill -9: how long its successors took to load its
#      __transaction_state partitions, and how long after the last transaction's timeout
#      passed none was left Ongoing (the coordinators look every second here:
#      transaction.abort.timed.out.transaction.cleanup.interval.ms=1000).
# With --peer kafka, part 1 runs against Apache Kafka 4.4 instead (scripts/peer-kafka.sh, three
# KRaft nodes, the same replication and min.insync.replicas): the yardstick for the ratios.
#   scripts/txn_bench.sh [--peer kafka]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/.."
ensure_packages zookeeper
ensure_python_clients
py=$PYTHON_VENV/bin/python
n=${TBENCH_N:-1000000}
rounds=${TBENCH_ROUNDS:-2}
peer=""
case "${1:-}" in
  --peer) [ "${2:-}" = kafka ] || { echo "usage: scripts/txn_bench.sh [--peer kafka]" >&2; exit 2; }
    peer=kafka ;;
  "") ;;
  *) echo "usage: scripts/txn_bench.sh [--peer kafka]" >&2; exit 2 ;;
esac

# Part 1 of the runs against `b`, topic tb.
throughput_rounds() {
  for r in $(seq 1 "$rounds"); do
    echo "== round $r"
    idem=$("$py" scripts/txn_bench.py throughput "$b" tb "$n" 0); echo "$idem"
    for size in 1 100 10000; do
      m=$n; [ "$size" = 1 ] && m=$((n / 100)); [ "$size" = 100 ] && m=$((n / 5))
      t=$("$py" scripts/txn_bench.py throughput "$b" tb "$m" "$size"); echo "$t"
      awk -v a="$(echo "$idem" | rate)" -v b="$(echo "$t" | rate)" -v s="$size" \
        'BEGIN { printf "  transactions of %s / idempotent: %.3f\n", s, b / a }'
    done
  done
}
rate() { sed -E 's/.* rate ([0-9]+).*/\1/'; }

if [ "$peer" = kafka ]; then
  export PEER_HOME=${PEER_HOME:-.gregor/peer-txn-bench} PEER_BASE_PORT=${PEER_BASE_PORT:-19292}
  export PEER_PROPERTIES="min.insync.replicas=2
transaction.state.log.min.isr=2"
  trap '"$here/peer-kafka.sh" stop >/dev/null 2>&1 || true' EXIT
  "$here/peer-kafka.sh" start 3 >/dev/null
  b=127.0.0.1:$PEER_BASE_PORT
  "$here/peer-kafka.sh" tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$b" \
    --create --topic tb --partitions 3 --replication-factor 3 >/dev/null
  echo "Apache Kafka 4.4, three KRaft nodes"
  throughput_rounds
  exit 0
fi

cargo build --release --quiet
G=$PWD/target/release/gregor
export GREGOR_HOME
GREGOR_HOME=$(mktemp -d /tmp/gregor-tbench.XXXXXX)
export ZK_PORT=${ZK_PORT:-43181} BASE_PORT=${BASE_PORT:-50092} METRICS_BASE_PORT=off GREGOR_BIN=$G
export BROKER_PROPERTIES="transaction.abort.timed.out.transaction.cleanup.interval.ms=1000"
cleanup() { "$here/cluster.sh" stop >/dev/null 2>&1 || true; rm -rf "$GREGOR_HOME"; }
trap cleanup EXIT
"$here/cluster.sh" start 3 >/dev/null
zk=127.0.0.1:$ZK_PORT/gregor
b=127.0.0.1:$BASE_PORT
"$G" topics --zookeeper "$zk" --create --topic tb --partitions 3 --replication-factor 3 >/dev/null
"$G" topics --zookeeper "$zk" --create --topic tlat --partitions 3 --replication-factor 3 >/dev/null
throughput_rounds
# TBENCH_ONLY=throughput: part 1 alone.
[ "${TBENCH_ONLY:-}" = throughput ] && exit 0
echo "== read_committed end-to-end latency, 10,000 msg/s, 100 ms transactions, 10 s"
"$py" scripts/txn_bench.py latency-consumer "$b" tlat 10000 10 >"$GREGOR_HOME/lat.txt" &
c=$!
sleep 3
"$py" scripts/txn_bench.py latency-producer "$b" tlat 10000 10 100
wait "$c"
cat "$GREGOR_HOME/lat.txt"
open=${TBENCH_OPEN:-1000}
timeout_ms=${TBENCH_OPEN_TIMEOUT_MS:-240000}
echo "== $open transactions left open (timeout $timeout_ms ms), then kill -9 of broker 1"
"$G" topics --zookeeper "$zk" --create --topic topen --partitions 3 --replication-factor 3 >/dev/null
t_open=$(date +%s.%N)
for first in $(seq 0 100 $((open - 1))); do
  "$py" scripts/txn_bench.py leave-open "$b" topen "$first" 100 "$timeout_ms" >/dev/null
done
t_last=$(date +%s.%N)
ongoing() { "$G" transactions -b "$b" --list 2>/dev/null | awk '$4 == "Ongoing"' | wc -l; }
before=$(ongoing)
echo "opened in $(awk -v a="$t_open" -v b="$t_last" 'BEGIN { printf "%.1f", b - a }') s; ongoing: $before"
ours=$("$G" transactions -b "$b" --list | awk '$2 == 1 && $4 == "Ongoing"' | wc -l)
kill -9 "$(cat "$GREGOR_HOME/broker-1/pid")"
t_kill=$(date +%s.%N)
b=127.0.0.1:$((BASE_PORT + 1))
# New leaders for broker 1's partitions of __transaction_state first (until then its
# transactions are listed by nobody), then all its transactions listed again, then none left
# Ongoing.
while "$G" topics --zookeeper "$zk" --describe --topic __transaction_state |
  grep -qE "Leader: (1|-1)\s"; do sleep 0.2; done
while [ "$(ongoing)" -lt "$before" ] && [ "$(date +%s)" -lt $(( ${t_last%.*} + timeout_ms / 1000 )) ]; do
  sleep 0.2
done
t_taken=$(date +%s.%N)
while [ "$(ongoing)" != 0 ]; do sleep 0.2; done
t_zero=$(date +%s.%N)
awk -v k="$t_kill" -v t="$t_taken" -v z="$t_zero" -v l="$t_last" -v to="$timeout_ms" -v n="$ours" \
  'BEGIN { printf "%d transactions coordinated by broker 1: listed by its successors %.1f s after the kill -9; none Ongoing %.1f s after the last timeout passed\n", n, t - k, z - (l + to / 1000) }'
grep -h "loaded .* transactional ids" "$GREGOR_HOME"/broker-[23]/broker.log | tail -20
