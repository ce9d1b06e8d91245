#!/usr/bin/env bash
# The Java consumer (Kafka 4.4's ConsumerPerformance) reading many-partition topics from gregor
# and from Apache Kafka 4.4 on this machine, runs alternated so that both see the same noise:
#   1. 100 partitions, 2,000,000 x 100 B written by ProducerPerformance in 16 KiB batches,
#      read with the consumer's default limits;
#   2. 1,000 partitions holding 200 records of 100 B each, read with fetch.max.bytes=100000.
#   scripts/fetch_peer_bench.sh [RUNS]     (default 5 runs of each on each side)
# It starts a 1-broker gregor (scripts/cluster.sh, release build) and a 1-node Kafka
# (scripts/peer-kafka.sh) of its own under target/fetch-peer-bench, and stops both at the end.
# Prints one line per run (side, case, seconds, MB/s, records) and the median ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
work=$PWD/target/fetch-peer-bench
rm -rf "$work"
mkdir -p "$work"

export GREGOR_HOME=$work/gregor ZK_PORT=${ZK_PORT:-2191} BASE_PORT=${BASE_PORT:-9192} METRICS_BASE_PORT=off
export PEER_HOME=$work/kafka PEER_BASE_PORT=${PEER_BASE_PORT:-19192}
gregor=127.0.0.1:$BASE_PORT
kafka=127.0.0.1:$PEER_BASE_PORT
tool() { scripts/peer-kafka.sh tool "$@"; }
cleanup() {
  scripts/cluster.sh stop >/dev/null 2>&1 || true
  scripts/peer-kafka.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

cargo build --release --quiet
scripts/cluster.sh start 1 >/dev/null
scripts/peer-kafka.sh start 1 >/dev/null

for side in gregor kafka; do
  addr=${!side}
  tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$addr" --create --topic t100 \
    --partitions 100 --replication-factor 1 >/dev/null
  tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$addr" --create --topic t1000 \
    --partitions 1000 --replication-factor 1 >/dev/null
  tool org.apache.kafka.tools.ProducerPerformance --topic t100 --num-records 2000000 \
    --record-size 100 --throughput -1 --producer-props "bootstrap.servers=$addr" \
    batch.size=16384 linger.ms=20 acks=1 | tail -1 | sed "s/^/$side t100 written: /"
  tool org.apache.kafka.tools.ProducerPerformance --topic t1000 --num-records 200000 \
    --record-size 100 --throughput -1 --producer-props "bootstrap.servers=$addr" \
    batch.size=16384 linger.ms=20 acks=1 | tail -1 | sed "s/^/$side t1000 written: /"
done

printf 'fetch.max.bytes=100000\n' >"$work/small-budget.properties"
: >"$work/default.properties"
# One ConsumerPerformance run: prints "SECONDS MB_PER_S RECORDS" (its fetch time and rate,
# after the group join; its columns are start, end, MB, MB/s, records, records/s,
# rebalance ms, fetch ms, fetch MB/s, fetch records/s).
consume() {
  local addr=$1 topic=$2 n=$3 config=$4
  tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$addr" --topic "$topic" \
    --messages "$n" --timeout 120000 --consumer.config "$config" --hide-header 2>/dev/null |
    tail -1 | awk -F, '{ printf "%.3f %.1f %d\n", $8 / 1000, $9, $5 }'
}

results=$work/results.txt
: >"$results"
for ((i = 1; i <= runs; i++)); do
  for side in gregor kafka; do
    addr=${!side}
    echo "$side t100-default $(consume "$addr" t100 2000000 "$work/default.properties")" | tee -a "$results"
    echo "$side t1000-100KB $(consume "$addr" t1000 200000 "$work/small-budget.properties")" | tee -a "$results"
  done
done

python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 5]
for case in ("t100-default", "t1000-100KB"):
    g = [float(r[3]) for r in rows if r[0] == "gregor" and r[1] == case]
    k = [float(r[3]) for r in rows if r[0] == "kafka" and r[1] == case]
    gs = [float(r[2]) for r in rows if r[0] == "gregor" and r[1] == case]
    ks = [float(r[2]) for r in rows if r[0] == "kafka" and r[1] == case]
    ratios = [a / b for a, b in zip(g, k) if b > 0]
    print("%-13s fetch MB/s gregor %s kafka %s; seconds gregor %s kafka %s; gregor/kafka per pair %s, median %.2f" % (
        case, g, k, gs, ks, ["%.2f" % r for r in ratios], statistics.median(ratios) if ratios else float("nan")))
EOF
