#!/usr/bin/env bash
# Runs a standalone ZooKeeper on 127.0.0.1 from the Debian `zookeeper` package.
#   scripts/zk.sh start|stop|status [DIR]     (port: ZK_PORT, default 2181)
# Data, config, log and pid file live under DIR (default .gregor/zk).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

cmd=${1:-}
dir=${2:-.gregor/zk}
port=${ZK_PORT:-2181}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pidfile=$dir/zookeeper.pid

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case "$cmd" in
  start)
    ensure_packages zookeeper
    if running; then
      echo "ZooKeeper already running (pid $(cat "$pidfile"))"
      exit 0
    fi
    cat >"$dir/zoo.cfg" <<CFG
tickTime=500
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
minSessionTimeout=1000
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
CFG
    nohup java -Xmx256m -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
      org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" >"$dir/zookeeper.log" 2>&1 &
    echo $! >"$pidfile"
    if ! wait_for "zk_serving $port" 60; then
      echo "ZooKeeper did not start; see $dir/zookeeper.log" >&2
      exit 1
    fi
    echo "ZooKeeper serving on 127.0.0.1:$port (data in $dir)"
    ;;
  stop)
    if running; then
      kill "$(cat "$pidfile")"
      wait_for "! kill -0 $(cat "$pidfile") 2>/dev/null" 20 || kill -9 "$(cat "$pidfile")"
      echo "ZooKeeper stopped"
    else
      echo "ZooKeeper not running"
    fi
    rm -f "$pidfile"
    ;;
  status)
    if running && zk_serving "$port"; then
      echo "ZooKeeper serving on 127.0.0.1:$port (pid $(cat "$pidfile"))"
    else
      echo "ZooKeeper not running"
      exit 1
    fi
    ;;
  *)
    echo "usage: scripts/zk.sh start|stop|status [DIR]" >&2
    exit 2
    ;;
esac
