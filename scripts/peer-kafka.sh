#!/usr/bin/env bash
# Apache Kafka 4.4.0 beside gregor, for side-by-side measurements and to see what Kafka answers:
# a KRaft cluster (each node broker and controller) of N nodes on 127.0.0.1, with settings
# matched to scripts/cluster.sh's gregor (no fsync per message, replication factor 1 by
# default, 1 GiB heap per node).
#   scripts/peer-kafka.sh install | start [N] | stop | status | tool CLASS ARGS...
# Kafka and its tools come from Maven Central (scripts/peer-kafka/pom.xml) into
# target/peer-kafka/libs; PEER_HOME (default .gregor/peer-kafka) holds the nodes' data and logs;
# PEER_BASE_PORT (19092: node i listens on PEER_BASE_PORT+i-1, its controller on +100) chooses
# the ports; PEER_PROPERTIES (lines of key=value) is added to every node's server.properties.
# `tool` runs one of Kafka's tool classes (org.apache.kafka.tools.ProducerPerformance, …) with
# the same jars.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/.."

home=${PEER_HOME:-.gregor/peer-kafka}
base_port=${PEER_BASE_PORT:-19092}
libs=target/peer-kafka/libs

install_kafka() {
  ensure_maven_jars scripts/peer-kafka/pom.xml "$libs" kafka_2.13-4.4.0.jar \
    "Apache Kafka 4.4.0 (kafka_2.13, kafka-tools and their jars)"
}

node_dir() { echo "$home/node-$1"; }
node_port() { echo $((base_port + $1 - 1)); }
controller_port() { echo $((base_port + 100 + $1 - 1)); }
node_pid() { cat "$(node_dir "$1")/pid" 2>/dev/null || true; }
node_alive() { local p; p=$(node_pid "$1"); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

java_cmd() { java -Xms1g -Xmx1g -cp "$PWD/$libs/*" "$@"; }

start_cluster() {
  local n=${1:-1} i voters="" cluster_id
  install_kafka
  for ((i = 1; i <= n; i++)); do
    voters+="${voters:+,}$i@127.0.0.1:$(controller_port "$i")"
  done
  mkdir -p "$home"
  if [ ! -f "$home/cluster-id" ]; then
    java_cmd kafka.tools.StorageTool random-uuid >"$home/cluster-id"
  fi
  cluster_id=$(cat "$home/cluster-id")
  for ((i = 1; i <= n; i++)); do
    local dir port cport
    dir=$(node_dir "$i")
    port=$(node_port "$i")
    cport=$(controller_port "$i")
    if node_alive "$i"; then
      echo "node $i already running (pid $(node_pid "$i"))"
      continue
    fi
    mkdir -p "$dir"
    cat >"$dir/server.properties" <<P
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$(cd "$dir" && pwd)/data
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=$((n < 3 ? n : 3))
transaction.state.log.replication.factor=$((n < 3 ? n : 3))
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
${PEER_PROPERTIES:-}
P
    if [ ! -f "$dir/data/meta.properties" ]; then
      java_cmd kafka.tools.StorageTool format -t "$cluster_id" -c "$dir/server.properties" \
        >>"$dir/kafka.log" 2>&1
    fi
    nohup java -Xms1g -Xmx1g -cp "$PWD/$libs/*" kafka.Kafka "$dir/server.properties" \
      >>"$dir/kafka.log" 2>&1 &
    echo $! >"$dir/pid"
  done
  for ((i = 1; i <= n; i++)); do
    if ! wait_for "port_open $(node_port "$i")" 60; then
      echo "Kafka node $i did not open port $(node_port "$i"); its log ends:" >&2
      tail -20 "$(node_dir "$i")/kafka.log" >&2
      exit 1
    fi
    echo "Kafka node $i: pid $(node_pid "$i"), 127.0.0.1:$(node_port "$i")"
  done
}

stop_cluster() {
  local d id
  for d in "$home"/node-*; do
    [ -d "$d" ] || continue
    id=${d##*-}
    if node_alive "$id"; then
      kill "$(node_pid "$id")"
      wait_for "! node_alive $id" 60 || kill -9 "$(node_pid "$id")"
      echo "stopped Kafka node $id"
    fi
  done
  rm -rf "$home"
}

case "${1:-}" in
  install) install_kafka ;;
  start) start_cluster "${2:-1}" ;;
  stop) stop_cluster ;;
  status)
    for d in "$home"/node-*; do
      [ -d "$d" ] || { echo "no Kafka nodes"; break; }
      id=${d##*-}
      if node_alive "$id"; then echo "node $id: running, pid $(node_pid "$id"), 127.0.0.1:$(node_port "$id")"
      else echo "node $id: not running"; fi
    done ;;
  tool) shift; install_kafka; java_cmd "$@" ;;
  *) echo "usage: scripts/peer-kafka.sh install | start [N] | stop | status | tool CLASS ARGS..." >&2; exit 2 ;;
esac
