#!/usr/bin/env bash
# Message format 0 against format v2, through the same kcat binary: a broker of the 0.8-era
# protocol (OLD_BIN, e.g. a build of an earlier commit) and this one (NEW_BIN) are started in
# turn, ROUNDS times, alternating; each round produces MESSAGES 100-byte messages with kcat
# (acks=1, one partition, RF 1) and reads them back. Then, on the new broker, `gregor perf
# produce` with v2 batches against v0 sets, and the cost of down-conversion: kcat reading the
# v2 data as a 0.8 client (Fetch v0) against reading it as stored.
#   scripts/bench_formats.sh OLD_BIN [NEW_BIN] [MESSAGES] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
old=${1:?usage: bench_formats.sh OLD_BIN [NEW_BIN] [MESSAGES] [ROUNDS]}
new=${2:-$here/../target/release/gregor}
messages=${3:-1000000}
rounds=${4:-3}
export ZK_PORT=${BENCH_ZK_PORT:-33181} BASE_PORT=${BENCH_BASE_PORT:-39192}
b="127.0.0.1:$BASE_PORT"
input=$(mktemp)
head -c 99 /dev/zero | tr '\0' 'x' | awk -v n="$messages" '{for(i=0;i<n;i++)print}' >"$input"

elapsed() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
rate() { awk -v n="$messages" -v t="$1" 'BEGIN{printf "%d", n/t}'; }

start() { # binary
  export GREGOR_HOME GREGOR_BIN=$1
  GREGOR_HOME=$(mktemp -d /tmp/gregor-formats.XXXXXX)
  "$here/cluster.sh" start 1 >/dev/null
  "$1" topics --zookeeper "127.0.0.1:$ZK_PORT/gregor" --create --topic f --replica-assignment 1 >/dev/null
  # One message first, so that the timed runs do not include the wait for a leader.
  echo warm | kcat -P -b "$b" -t f -p 0 -X acks=1 2>/dev/null
}
# CPU seconds the broker has used so far (utime + stime).
broker_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$(cat "$GREGOR_HOME/broker-1/pid")/stat"; }
stop() { "$here/cluster.sh" stop >/dev/null 2>&1 || true; rm -rf "$GREGOR_HOME"; }
trap 'stop; rm -f "$input"' EXIT

consume() { kcat -C -b "$b" -t f -p 0 -o beginning -e -q "$@"; }
echo "| round | broker | kcat produce msg/s | broker CPU s | kcat consume msg/s | broker CPU s |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  for which in old new; do
    bin=$old; [ $which = new ] && bin=$new
    start "$bin"
    c0=$(broker_cpu)
    p=$(elapsed kcat -P -b "$b" -t f -p 0 -X acks=1 -l "$input")
    c1=$(broker_cpu)
    c=$(elapsed consume)
    c2=$(broker_cpu)
    echo "| $r | $which | $(rate "$p") | $(echo "$c1 - $c0" | bc) | $(rate "$c") | $(echo "$c2 - $c1" | bc) |"
    stop
  done
done

start "$new"
echo
echo "| round | gregor perf produce, magic 0 msg/s | magic 2 msg/s | kcat read as stored (v2) msg/s | broker CPU s | as a 0.8 client (down-converted) msg/s | broker CPU s |"
echo "|---|---|---|---|---|---|---|"
kcat -P -b "$b" -t f -p 0 -X acks=1 -l "$input" >/dev/null 2>&1
for r in $(seq 1 "$rounds"); do
  perf() { "$new" perf produce --bootstrap "$b" --topic f --messages "$messages" --size 100 --magic "$1" | tail -1 | sed -E 's/^[0-9]+ messages, ([0-9]+) msg\/s.*/\1/'; }
  m0=$(perf 0); m2=$(perf 2)
  c0=$(broker_cpu)
  stored=$(elapsed kcat -C -b "$b" -t f -p 0 -o beginning -c "$messages" -e -q)
  c1=$(broker_cpu)
  old_client=$(elapsed kcat -C -b "$b" -t f -p 0 -o beginning -c "$messages" -e -q -X api.version.request=false -X broker.version.fallback=0.8.2)
  c2=$(broker_cpu)
  echo "| $r | $m0 | $m2 | $(rate "$stored") | $(echo "$c1 - $c0" | bc) | $(rate "$old_client") | $(echo "$c2 - $c1" | bc) |"
done
