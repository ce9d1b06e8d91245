#!/usr/bin/env bash
# Benchmarks a 3-broker cluster it starts itself (in a temporary GREGOR_HOME, on BENCH_ZK_PORT
# and BENCH_BASE_PORT..+2) and prints one table: 100-byte messages produced with
# (replication 1, acks 1), (3, 1) and (3, all); consumer throughput; the RF 1 produce and
# consume cases driven by kcat (consuming into a file); and the machine's own ceiling measured
# in the same run (raw loopback TCP, sequential disk write + fsync of the same bytes), every figure also as a share of that ceiling; then
# end-to-end latency (gregor perf e2e) through one partition with replication 3 and acks=all at
# 10 K and 50 K messages a second, and how late a sleeping thread wakes on this machine (the
# floor under those latencies).
# Then what an append costs at scale: produce (RF 1, broker 1) beside N idle consumers each
# holding a long-poll Fetch (500 ms, min_bytes 1) on two partitions nobody writes to, with
# broker 1's CPU per produced message (from /proc), as ratios to N = 0 in the same run; and
# produce request latency on a partition while retention deletes 1 GB of its segments, as a
# ratio to the same produce just before.
#   BENCH_MESSAGES (default 2000000) messages per case; BENCH_E2E_SECONDS (default 10) per rate;
#   BENCH_IDLE_FETCHERS (default "0 200 2000"); BENCH_RETENTION_MESSAGES (default 5000000).
#   GREGOR_BIN runs the brokers of another build (scripts/cluster.sh) with this build's tools.
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
idle_pid=
cleanup() {
  [ -z "$idle_pid" ] || kill "$idle_pid" 2>/dev/null || true
  "$here/cluster.sh" stop >/dev/null 2>&1 || true
  rm -rf "$GREGOR_HOME"
}
trap cleanup EXIT
# Room for 2,000 idle consumers from one address, connecting at once; retention looked at
# every second.
export BROKER_PROPERTIES="max.connections=5000
max.connections.per.ip=5000
max.connection.creation.rate.per.ip=1000000
log.retention.check.interval.ms=1000"
"$here/cluster.sh" start 3 >/dev/null
zk="127.0.0.1:$ZK_PORT/gregor"
b="127.0.0.1:$BASE_PORT"
"$bin" topics --zookeeper "$zk" --create --topic rf1 --replica-assignment 1 >/dev/null
"$bin" topics --zookeeper "$zk" --create --topic rf3 --replica-assignment 1:2:3 >/dev/null
"$bin" topics --zookeeper "$zk" --create --topic kc --replica-assignment 1 >/dev/null
"$bin" topics --zookeeper "$zk" --create --topic lat --replica-assignment 1:2:3 >/dev/null

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
# The same messages read back by kcat (librdkafka, format v2 fetches) into a file, to the end
# of the partition (-e): a real client's consume rate.
t0=$(date +%s.%N)
kcat -C -b "$b" -t kc -p 0 -o beginning -e -q -f '%s\n' >"$lines.out" 2>/dev/null
t1=$(date +%s.%N)
got=$(wc -l <"$lines.out")
[ "$got" -eq "$messages" ] || { echo "kcat read $got of $messages messages" >&2; exit 1; }
kcat_consume=$(awk -v n="$messages" -v s="$size" -v t="$(echo "$t1 - $t0" | bc)" 'BEGIN{printf "%d %.1f", n/t, n*s/t/1048576}')

# "... latency ms p50 A p99 B p99.9 C max D" -> "A B C D"
e2e() {
  "$bin" perf e2e --bootstrap "$b" --topic lat --rate "$1" --size "$size" --acks -1 \
    --seconds "${BENCH_E2E_SECONDS:-10}" | tail -1 |
    sed -E 's/.*p50 ([0-9.]+) p99 ([0-9.]+) p99.9 ([0-9.]+) max ([0-9.]+)$/\1 \2 \3 \4/'
}
e2e_10k=$(e2e 10000)
e2e_50k=$(e2e 50000)

# Produce to `hot` beside N parked fetchers: "N msg/s MB/s µs-of-broker-CPU-per-message".
"$bin" topics --zookeeper "$zk" --create --topic hot --replica-assignment 1 >/dev/null
"$bin" topics --zookeeper "$zk" --create --topic idle --replica-assignment 1,1 >/dev/null
broker1=$(cat "$GREGOR_HOME/broker-1/pid")
cpu_ticks() { awk '{print $14 + $15}' "/proc/$broker1/stat"; }
beside_idle() {
  local n=$1 c0 c1 r
  if [ "$n" -gt 0 ]; then
    "$bin" perf idle-fetch -b "$b" --topic idle --partitions 0,1 --fetchers "$n" \
      --max-wait-ms 500 --seconds 900 >"$GREGOR_HOME/idle.out" 2>&1 &
    idle_pid=$!
    wait_for "grep -q '^ready' '$GREGOR_HOME/idle.out'" 120 ||
      { echo "idle fetchers did not start:" >&2; cat "$GREGOR_HOME/idle.out" >&2; exit 1; }
  fi
  c0=$(cpu_ticks)
  r=$(perf_produce hot 1)
  c1=$(cpu_ticks)
  if [ -n "$idle_pid" ]; then
    # Every fetcher held its connection through the run (the tool exits when one fails).
    kill -0 "$idle_pid" 2>/dev/null ||
      { echo "idle fetchers failed during the run:" >&2; cat "$GREGOR_HOME/idle.out" >&2; exit 1; }
    kill "$idle_pid" 2>/dev/null || true
    wait "$idle_pid" 2>/dev/null || true
    idle_pid=
  fi
  echo "$n $r $(awk -v t=$((c1 - c0)) -v k="$(getconf CLK_TCK)" -v m="$messages" 'BEGIN{printf "%.2f", t / k * 1e6 / m}')"
}
idle_rows=()
for n in ${BENCH_IDLE_FETCHERS:-0 200 2000}; do
  idle_rows+=("$(beside_idle "$n")")
done

# Produce p99 on `ret` (64 MiB segments, files unlinked as soon as they leave the log) holding
# 1 GB, before and while retention deletes it: request latency "p99 p99.9 max" each time.
ret_msgs=${BENCH_RETENTION_MESSAGES:-5000000}
"$bin" topics --zookeeper "$zk" --create --topic ret --replica-assignment 1 \
  --config segment.bytes=67108864 --config file.delete.delay.ms=0 >/dev/null
"$bin" perf produce --bootstrap "$b" --topic ret --messages 1000000 --size 1000 --acks 1 >/dev/null
tails() {
  "$bin" perf produce --bootstrap "$b" --topic ret --messages "$ret_msgs" --size "$size" --acks 1 |
    tail -1 | sed -E 's/.* p99 ([0-9.]+) p99.9 ([0-9.]+) max ([0-9.]+)$/\1 \2 \3/'
}
ret_before=$(tails)
"$bin" topics --zookeeper "$zk" --alter --topic ret --config retention.bytes=1 >/dev/null
ret_during=$(tails)
ret_left=$(du -sm "$GREGOR_HOME"/broker-1/data/ret-0 2>/dev/null | cut -f1)

ceiling=$("$bin" perf ceiling --bytes $((messages * size)) --dir "$GREGOR_HOME" --stall-seconds 10)
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
row "consume RF 1 (kcat, into a file)" "$kcat_consume"
echo "ceiling: loopback TCP $tcp MB/s, disk write + fsync $disk MB/s (same bytes, same run)"
echo "MB/s counts message values only (100 bytes each)."
echo
echo "| end-to-end latency, RF 3, acks all (gregor perf e2e) | p50 ms | p99 ms | p99.9 ms | max ms |"
echo "|------------------------------------------------------|--------|--------|----------|--------|"
for r in "10000 $e2e_10k" "50000 $e2e_50k"; do
  read -r rate p50 p99 p999 max <<<"$r"
  printf "| %-52s | %6s | %6s | %8s | %6s |\n" "$rate msg/s" "$p50" "$p99" "$p999" "$max"
done
# The floor under those latencies: how late a sleeping thread woke on this machine, same run.
echo "$ceiling" | grep '^scheduling:'
echo
echo "| produce RF 1 beside N idle long-poll fetchers | msg/s | ratio | broker CPU µs/msg | ratio |"
echo "|-----------------------------------------------|-------|-------|-------------------|-------|"
base_rate= base_cpu=
for r in "${idle_rows[@]}"; do
  read -r n rate _mbs cpu <<<"$r"
  [ -n "$base_rate" ] || { base_rate=$rate; base_cpu=$cpu; }
  awk -v n="$n" -v r="$rate" -v c="$cpu" -v br="$base_rate" -v bc="$base_cpu" \
    'BEGIN{printf "| %-45s | %5.0fK | %5.2f | %17.2f | %5.2f |\n", n " idle fetchers", r/1000, r/br, c, c/bc}'
done
echo
echo "| produce on a partition, request latency ms | p99 | p99.9 | max |"
echo "|--------------------------------------------|-----|-------|-----|"
read -r b99 b999 bmax <<<"$ret_before"
read -r d99 d999 dmax <<<"$ret_during"
printf "| %-42s | %s | %s | %s |\n" "before" "$b99" "$b999" "$bmax"
printf "| %-42s | %s | %s | %s |\n" "while retention deletes 1 GB of it" "$d99" "$d999" "$dmax"
awk -v a="$d99" -v b="$b99" -v c="$d999" -v d="$b999" -v e="$dmax" -v f="$bmax" \
  'BEGIN{printf "| %-42s | %.2f | %.2f | %.2f |\n", "ratio", a/b, c/d, e/f}'
echo "(${ret_left} MB of the partition left on disk after)"
