#!/usr/bin/env bash
# What client quotas cost and how they hold, on one release broker it starts itself (in a
# temporary GREGOR_HOME, on QBENCH_ZK_PORT and QBENCH_PORT), the topic deleted, created again
# and synced before every run, runs alternated (doc/performance.md, "Quotas"):
#   1. `gregor perf produce` with no quota anywhere against a producer_byte_rate on its own
#      client id too high to hit (every request looked up, recorded and checked), RUNS pairs;
#   2. a confluent-kafka producer flat out for 10 s alone, then beside one held to 1 MiB/s;
#   3. the held producer alone for 30 s: its bytes acknowledged per second.
#   QBENCH_RUNS (default 5), QBENCH_MESSAGES (default 4000000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/.."
ensure_packages zookeeper
cargo build --release --quiet
G=$PWD/target/release/gregor
PY=$PWD/target/python-venv/bin/python
Q=$PWD/tests/clients/quota_client.py
[ -x "$PY" ] || { echo "quota_bench: run scripts/test.sh once first (it installs confluent-kafka)" >&2; exit 1; }
export GREGOR_HOME GREGOR_BIN=$G ZK_PORT=${QBENCH_ZK_PORT:-22181} BASE_PORT=${QBENCH_PORT:-29092} METRICS_BASE_PORT=off
GREGOR_HOME=$(mktemp -d /tmp/gregor-qbench.XXXXXX)
trap 'scripts/cluster.sh stop >/dev/null 2>&1 || true; rm -rf "$GREGOR_HOME"' EXIT
scripts/cluster.sh start 1 >/dev/null
B=127.0.0.1:$BASE_PORT
fresh() {
  "$G" topics -b "$B" --delete --topic qb --if-exists >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do "$G" topics -b "$B" --list 2>/dev/null | grep -qx qb || break; sleep 0.2; done
  "$G" topics -b "$B" --create --topic qb --partitions 1 --replication-factor 1 >/dev/null
  sync; sleep 1
}
quota() { "$G" configs -b "$B" --alter --client "$1" "$2" "$3" >/dev/null 2>&1 || true; }
perf() { "$G" perf produce -b "$B" --topic qb --messages "${QBENCH_MESSAGES:-4000000}" --size 100 --batch-size 200 2>&1 | tail -1 | sed 's/;.*//'; }
mbs() { python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['total'] / 10 / 1e6, 1), 'MB/s')" "$1"; }
for i in $(seq 1 "${QBENCH_RUNS:-5}"); do
  quota gregor-perf --delete-config producer_byte_rate
  fresh; echo "no quota $i: $(perf)"
  quota gregor-perf --add-config producer_byte_rate=1000000000000
  fresh; echo "quota not hit $i: $(perf)"
done
quota gregor-perf --delete-config producer_byte_rate
quota slow --add-config producer_byte_rate=1048576
out=$(mktemp -d)
for i in 1 2 3; do
  fresh; "$PY" "$Q" produce "$B" qb free 10 > "$out/alone.json"
  fresh; "$PY" "$Q" produce "$B" qb slow 10 > "$out/slow.json" &
  "$PY" "$Q" produce "$B" qb free 10 > "$out/beside.json"; wait
  echo "free producer alone $i: $(mbs "$out/alone.json"), beside a held one: $(mbs "$out/beside.json")"
done
fresh; "$PY" "$Q" produce "$B" qb slow 30 > "$out/slow30.json"
echo "held to 1048576 B/s, bytes per second over 30 s: $(cat "$out/slow30.json")"
rm -rf "$out"
