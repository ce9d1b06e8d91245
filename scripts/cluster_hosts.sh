#!/usr/bin/env bash
# `scripts/cluster.sh --hosts ...`: the multi-host topology of scripts/hosts.sh to play with by
# hand — ZooKeeper as a 3-node ensemble on hosts zk1..zk3 (198.18.0.11-13), 5 brokers on
# b1..b5 (198.18.0.21-25, port 9092, metrics on 9404), and a client host (198.18.0.100).
#   scripts/cluster.sh --hosts start | stop | status | isolate HOST | cut "HOSTS" "HOSTS" |
#                              oneway FROM TO | slow HOST KBIT | heal | kill ID | restart ID
# Commands against it run on the client host:
#   scripts/hosts.sh exec gregor client target/release/gregor status --bootstrap 198.18.0.21:9092
# GREGOR_HOME (default .gregor/hosts) holds data and logs; the namespaces are named gregor-*
# (HOSTS_TAG). Needs root and iproute2.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/.."

home=${GREGOR_HOME:-.gregor/hosts}
mkdir -p "$home"
home=$(cd "$home" && pwd)
tag=${HOSTS_TAG:-gregor}
bin=${GREGOR_BIN:-target/release/gregor}
case "$bin" in /*) ;; *) bin=$(pwd)/$bin ;; esac
hosts="$here/hosts.sh"
zk_connect="198.18.0.11:2181,198.18.0.12:2181,198.18.0.13:2181/gregor"
bootstrap="198.18.0.21:9092,198.18.0.22:9092,198.18.0.23:9092,198.18.0.24:9092,198.18.0.25:9092"

on() { local h=$1; shift; "$hosts" exec "$tag" "$h" "$@"; }
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# `srvr` to ensemble member N from the client host: its mode once it serves.
zk_mode() {
  on client timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/2181" && printf srvr >&3 && cat <&3' \
    "$("$hosts" addr "zk$1")" 2>/dev/null | sed -n 's/^Mode: //p'
}

# Every broker in the metadata, asked from the client host.
all_registered() {
  local out
  out=$(on client "$bin" status --bootstrap "$bootstrap" 2>/dev/null) || true
  [[ "$out" == *"Brokers (5)"* ]]
}

start_zookeeper() {
  local n=$1 dir
  dir=$home/zk$n
  mkdir -p "$dir/data"
  echo "$n" >"$dir/data/myid"
  cat >"$dir/zoo.cfg" <<CFG
tickTime=500
initLimit=20
syncLimit=4
dataDir=$dir/data
clientPort=2181
clientPortAddress=$("$hosts" addr "zk$n")
minSessionTimeout=1000
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
server.1=198.18.0.11:2888:3888
server.2=198.18.0.12:2888:3888
server.3=198.18.0.13:2888:3888
CFG
  nohup "$hosts" exec "$tag" "zk$n" java -Xmx192m -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" >"$dir/zookeeper.log" 2>&1 &
  echo $! >"$dir/pid"
}

start_broker() {
  local id=$1 dir addr
  dir=$home/broker-$id
  addr=$("$hosts" addr "b$id")
  mkdir -p "$dir"
  if pid_alive "$dir/pid"; then
    echo "broker $id already running"
    return
  fi
  cat >"$dir/server.properties" <<P
broker.id=$id
listeners=PLAINTEXT://$addr:9092
log.dirs=$dir/data
zookeeper.connect=$zk_connect
zookeeper.session.timeout.ms=6000
default.replication.factor=3
min.insync.replicas=2
metrics.listener=$addr:9404
${BROKER_PROPERTIES:-}
P
  nohup "$hosts" exec "$tag" "b$id" "$bin" broker --config "$dir/server.properties" >>"$dir/broker.log" 2>&1 &
  echo $! >"$dir/pid"
  echo "broker $id on $addr:9092 (metrics http://$addr:9404/metrics, log $dir/broker.log)"
}

stop_pid() {
  local pidfile=$1 pid
  pid_alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  pid=$(cat "$pidfile")
  kill -TERM "$pid"
  wait_for "! kill -0 $pid 2>/dev/null" 60 || kill -9 "$pid"
  rm -f "$pidfile"
}

case "${1:-}" in
  start)
    ensure_packages zookeeper iproute2
    [ -x "$bin" ] || cargo build --release --quiet
    if ! ip netns list | grep -q "^$tag-sw"; then
      "$hosts" up "$tag"
    fi
    for n in 1 2 3; do pid_alive "$home/zk$n/pid" || start_zookeeper "$n"; done
    if ! wait_for '[ -n "$(zk_mode 1)" ] && [ -n "$(zk_mode 2)" ] && [ -n "$(zk_mode 3)" ]' 90; then
      echo "the ZooKeeper ensemble did not form; see $home/zk*/zookeeper.log" >&2
      exit 1
    fi
    echo "ZooKeeper ensemble: zk1 $(zk_mode 1), zk2 $(zk_mode 2), zk3 $(zk_mode 3) (zookeeper.connect=$zk_connect)"
    for id in 1 2 3 4 5; do start_broker "$id"; done
    if ! wait_for all_registered 60; then
      echo "not every broker registered; see $home/broker-*/broker.log" >&2
      exit 1
    fi
    echo "5 brokers registered. Try:"
    echo "  scripts/hosts.sh exec $tag client $bin status --bootstrap $bootstrap"
    echo "  scripts/cluster.sh --hosts isolate b1; scripts/cluster.sh --hosts heal"
    echo "Stop with: scripts/cluster.sh --hosts stop"
    ;;
  stop)
    for id in 1 2 3 4 5; do stop_pid "$home/broker-$id/pid"; done
    for n in 1 2 3; do stop_pid "$home/zk$n/pid"; done
    "$hosts" down "$tag"
    echo "stopped; hosts removed (data stays in $home)"
    ;;
  status)
    for n in 1 2 3; do echo "zk$n $("$hosts" addr "zk$n"): $(zk_mode "$n" || true)"; done
    for id in 1 2 3 4 5; do
      if pid_alive "$home/broker-$id/pid"; then s=running; else s=stopped; fi
      echo "broker $id $("$hosts" addr "b$id"):9092: $s"
    done
    on client "$bin" status --bootstrap "$bootstrap" || true
    ;;
  isolate) "$hosts" isolate "$tag" "${2:?host}" ;;
  cut) "$hosts" cut "$tag" "${2:?hosts}" "${3:?hosts}" ;;
  oneway) "$hosts" oneway "$tag" "${2:?from}" "${3:?to}" ;;
  slow) "$hosts" slow "$tag" "${2:?host}" "${3:?kbit}" ;;
  heal) "$hosts" heal "$tag" ;;
  kill)
    id=${2:?broker id}
    pid_alive "$home/broker-$id/pid" && kill -9 "$(cat "$home/broker-$id/pid")" && echo "broker $id killed"
    rm -f "$home/broker-$id/pid"
    ;;
  restart)
    id=${2:?broker id}
    stop_pid "$home/broker-$id/pid"
    start_broker "$id"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
