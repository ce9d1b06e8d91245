#!/usr/bin/env bash
# From nothing to a working 3-broker gregor cluster on 127.0.0.1: installs ZooKeeper and kcat
# when missing, builds, starts ZooKeeper and 3 brokers, creates a topic with 3 partitions and
# replication factor 3, produces and consumes a few messages with kcat, and shows the result.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/.."

ensure_packages zookeeper kcat
command -v cargo >/dev/null || { echo "cargo is needed (https://rustup.rs)" >&2; exit 1; }
echo "== building"
cargo build --release --quiet
bin=target/release/gregor
zk="127.0.0.1:${ZK_PORT:-2181}/gregor"
bootstrap="127.0.0.1:${BASE_PORT:-9092}"

echo "== starting ZooKeeper and 3 brokers"
"$here/cluster.sh" start 3

echo "== creating topic quickstart (3 partitions, replication factor 3)"
"$bin" topics --zookeeper "$zk" --describe --topic quickstart >/dev/null 2>&1 ||
  "$bin" topics --zookeeper "$zk" --create --topic quickstart --partitions 3 --replication-factor 3
all_led() { ! "$bin" topics --zookeeper "$zk" --describe --topic quickstart --unavailable | grep -q Partition; }
wait_for all_led 30 || { echo "partitions did not get leaders" >&2; exit 1; }

echo "== producing 5 keyed messages with kcat (key:value; the key picks the partition)"
printf 'k1:hello\nk2:gregor\nk3:this is\nk4:a replicated\nk5:commit log\n' | kcat -P -b "$bootstrap" -t quickstart -K: 2>&1
echo "== consuming them back"
kcat -C -b "$bootstrap" -t quickstart -o beginning -e -f 'partition %p offset %o: %k %s\n' 2>/dev/null

echo "== cluster state"
"$here/cluster.sh" status
cat <<MSG

The cluster keeps running in the background (data and logs under ${GREGOR_HOME:-.gregor/cluster}).
  Produce:  kcat -P -b $bootstrap -t quickstart
  Consume:  kcat -C -b $bootstrap -t quickstart -o beginning
  Describe: $bin topics --zookeeper $zk --describe
  Status:   $bin status --bootstrap $bootstrap
  Metrics:  curl -s http://127.0.0.1:${METRICS_BASE_PORT:-9404}/metrics   (Prometheus; see doc/metrics.md)
  The README's commands call it \`gregor\`: export PATH="$(cd "$(dirname "$bin")" && pwd):\$PATH"
  Stop:     scripts/cluster.sh stop
MSG
