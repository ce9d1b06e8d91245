#!/usr/bin/env bash
# Runs ZooKeeper and N gregor brokers on 127.0.0.1, with data and logs under one folder.
#   scripts/cluster.sh start N | stop | status | kill ID | restart ID
#   scripts/cluster.sh --hosts start | stop | status | isolate HOST | heal | ...
#     (hosts on their own addresses and a ZooKeeper ensemble: scripts/cluster_hosts.sh)
# GREGOR_HOME (default .gregor/cluster) holds everything; ZK_PORT (2181) and BASE_PORT (9092:
# broker i listens on BASE_PORT+i-1) choose the ports; GREGOR_BIN the binary (built if absent);
# BROKER_PROPERTIES (lines of key=value) is added to every broker's server.properties.
# METRICS_BASE_PORT (9404): broker i serves Prometheus metrics on http://127.0.0.1:METRICS_BASE_PORT+i-1/metrics;
# METRICS_BASE_PORT=off serves none.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --hosts ]; then
  shift
  exec "$here/cluster_hosts.sh" "$@"
fi
. "$here/lib.sh"
cd "$here/.."

home=${GREGOR_HOME:-.gregor/cluster}
zk_port=${ZK_PORT:-2181}
base_port=${BASE_PORT:-9092}
metrics_base=${METRICS_BASE_PORT:-9404}
bin=${GREGOR_BIN:-target/release/gregor}
export ZK_PORT=$zk_port

ensure_binary() {
  [ -x "$bin" ] || cargo build --release --quiet
}

broker_dir() { echo "$home/broker-$1"; }
broker_port() { echo $((base_port + $1 - 1)); }
metrics_line() { [ "$metrics_base" = off ] || echo "metrics.listener=127.0.0.1:$((metrics_base + $1 - 1))"; }
broker_pid() { cat "$(broker_dir "$1")/pid" 2>/dev/null || true; }
broker_alive() { local p; p=$(broker_pid "$1"); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_broker() {
  local id=$1 dir port
  dir=$(broker_dir "$id")
  port=$(broker_port "$id")
  mkdir -p "$dir"
  if broker_alive "$id"; then
    echo "broker $id already running (pid $(broker_pid "$id"))"
    return
  fi
  cat >"$dir/server.properties" <<P
broker.id=$id
listeners=PLAINTEXT://127.0.0.1:$port
log.dirs=$(cd "$dir" && pwd)/data
zookeeper.connect=127.0.0.1:$zk_port/gregor
zookeeper.session.timeout.ms=6000
default.replication.factor=1
num.partitions=1
$(metrics_line "$id")
${BROKER_PROPERTIES:-}
P
  nohup "$bin" broker --config "$dir/server.properties" >>"$dir/broker.log" 2>&1 &
  echo $! >"$dir/pid"
  if ! wait_for "port_open $port" 30; then
    echo "broker $id did not start; see $dir/broker.log" >&2
    tail -5 "$dir/broker.log" >&2
    exit 1
  fi
  local metrics=""
  [ "$metrics_base" = off ] || metrics=", metrics http://127.0.0.1:$((metrics_base + id - 1))/metrics"
  echo "broker $id listening on 127.0.0.1:$port (pid $(broker_pid "$id"), log $dir/broker.log$metrics)"
}

stop_broker() {
  local id=$1 pid
  pid=$(broker_pid "$id")
  if broker_alive "$id"; then
    kill -TERM "$pid"
    wait_for "! kill -0 $pid 2>/dev/null" 60 || kill -9 "$pid"
    echo "broker $id stopped"
  fi
  rm -f "$(broker_dir "$id")/pid"
}

broker_ids() {
  ls -d "$home"/broker-* 2>/dev/null | sed 's/.*broker-//' | sort -n
}

case "${1:-}" in
  start)
    n=${2:?usage: scripts/cluster.sh start N}
    ensure_binary
    "$here/zk.sh" start "$home/zk"
    for id in $(seq 1 "$n"); do start_broker "$id"; done
    ;;
  stop)
    for id in $(broker_ids); do stop_broker "$id"; done
    "$here/zk.sh" stop "$home/zk"
    ;;
  status)
    "$here/zk.sh" status "$home/zk" || true
    for id in $(broker_ids); do
      if broker_alive "$id"; then
        echo "broker $id: running, pid $(broker_pid "$id"), 127.0.0.1:$(broker_port "$id")"
      else
        echo "broker $id: stopped"
      fi
    done
    if zk_serving "$zk_port"; then
      "$bin" topics --zookeeper "127.0.0.1:$zk_port/gregor" --describe || true
    fi
    ;;
  kill)
    id=${2:?usage: scripts/cluster.sh kill ID}
    [ -d "$(broker_dir "$id")" ] || { echo "no broker $id in $home" >&2; exit 1; }
    broker_alive "$id" || { echo "broker $id is not running" >&2; exit 1; }
    pid=$(broker_pid "$id")
    kill -9 "$pid" && echo "broker $id killed (kill -9 $pid)"
    rm -f "$(broker_dir "$id")/pid"
    ;;
  restart)
    id=${2:?usage: scripts/cluster.sh restart ID}
    [ -d "$(broker_dir "$id")" ] || { echo "no broker $id in $home" >&2; exit 1; }
    ensure_binary
    stop_broker "$id"
    start_broker "$id"
    ;;
  *)
    echo "usage: scripts/cluster.sh start N | stop | status | kill ID | restart ID" >&2
    echo "       scripts/cluster.sh --hosts start | stop | status | isolate HOST | heal | ..." >&2
    exit 2
    ;;
esac
