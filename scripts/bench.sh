#!/usr/bin/env bash
# Benchmarks a 3-broker cluster it starts itself (in a temporary GREGOR_HOME, on BENCH_ZK_PORT
# and BENCH_BASE_PORT..+2) and prints one table: 100-byte messages produced with
# (replication 1, acks 1), (3, 1) and (3, all); consumer throughput; the RF 1 produce case driven
# by kcat; and the machine's own ceiling measured in the same run (raw loopback TCP, sequential
# disk write + fsync of the same bytes), every figure also as a share of that ceiling.
#   BENCH_MESSAGES (default 2000000) messages per case.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/.."

messages=${BENCH_MESSAGES:-2000000}
size=100
ensure_packages zookeeper kcat
cargo build --release --quiet
bin=$PWD/target/release/gregor

export GREGOR_HOME
GREGOR_HOME=$(mktemp -d /tmp/gregor-bench.XXXXXX)
export ZK_PORT=${BENCH_ZK_PORT:-32181} BASE_PORT=${BENCH_BASE_PORT:-39092}
cleanup() { "$here/cluster.sh" stop >/dev/null 2>&1 || true; rm -rf "$GREGOR_HOME"; }
trap cleanup EXIT
"$here/cluster.sh" start 3 >/dev/null
zk="127.0.0.1:$ZK_PORT/gregor"
b="127.0.0.1:$BASE_PORT"
"$bin" topics --zookeeper "$zk" --create --topic rf1 --replica-assignment 1 >/dev/null
"$bin" topics --zookeeper "$zk" --create --topic rf3 --replica-assignment 1:2:3 >/dev/null
"$bin" topics --zookeeper "$zk" --create --topic kc --replica-assignment 1 >/dev/null

# "N messages, X msg/s, Y MB/s, ..." -> "X Y"
rates() { sed -E 's/^[0-9]+ messages, ([0-9]+) msg\/s, ([0-9.]+) MB\/s.*/\1 \2/'; }
perf_produce() { "$bin" perf produce --bootstrap "$b" --topic "$1" --messages "$messages" --size "$size" --acks "$2" | tail -1 | rates; }

rf1_acks1=$(perf_produce rf1 1)
rf3_acks1=$(perf_produce rf3 1)
rf3_all=$(perf_produce rf3 -1)
consume=$("$bin" perf consume --bootstrap "$b" --topic rf1 --messages "$messages" | tail -1 | rates)

lines=$GREGOR_HOME/kcat-input
head -c $((size - 1)) /dev/zero | tr '\0' 'x' >"$lines.one"
awk -v n="$messages" 'NR==1{for(i=0;i<n;i++)print}' "$lines.one" >"$lines"
t0=$(date +%s.%N)
kcat -P -b "$b" -t kc -X acks=1 -l "$lines" 2>/dev/null
t1=$(date +%s.%N)
kcat_rates=$(awk -v n="$messages" -v s="$size" -v t="$(echo "$t1 - $t0" | bc)" 'BEGIN{printf "%d %.1f", n/t, n*s/t/1048576}')

ceiling=$("$bin" perf ceiling --bytes $((messages * size)) --dir "$GREGOR_HOME")
tcp=$(echo "$ceiling" | sed -n 's/^loopback tcp: \([0-9.]*\) MB\/s/\1/p')
disk=$(echo "$ceiling" | sed -n 's/^disk write + fsync: \([0-9.]*\) MB\/s/\1/p')

row() {
  read -r rate mbs <<<"$2"
  awk -v c="$1" -v r="$rate" -v m="$mbs" -v tcp="$tcp" -v disk="$disk" \
    'BEGIN{printf "| %-36s | %12d | %8.1f | %6.1f %% | %6.1f %% |\n", c, r, m, 100*m/tcp, 100*m/disk}'
}
echo "gregor bench: $messages messages of $size bytes per case, 3 brokers on 127.0.0.1, $(nproc) cores"
echo "| case                                 |        msg/s |     MB/s | of TCP   | of disk  |"
echo "|--------------------------------------|--------------|----------|----------|----------|"
row "produce RF 1, acks 1 (gregor perf)" "$rf1_acks1"
row "produce RF 3, acks 1 (gregor perf)" "$rf3_acks1"
row "produce RF 3, acks all (gregor perf)" "$rf3_all"
row "consume RF 1 (gregor perf)" "$consume"
row "produce RF 1, acks 1 (kcat)" "$kcat_rates"
echo "ceiling: loopback TCP $tcp MB/s, disk write + fsync $disk MB/s (same bytes, same run)"
echo "MB/s counts message values only (100 bytes each)."
