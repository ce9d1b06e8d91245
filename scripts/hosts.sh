#!/usr/bin/env bash
# Hosts on one machine: Linux network namespaces joined by a bridge, each with its own address
# from 198.18.0.0/15 (the range reserved for network test labs). The one piece that builds and
# breaks the network for `scripts/cluster.sh --hosts`, `tests/net_partitions.rs` and the chaos
# run's `--hosts` variant.
#
#   scripts/hosts.sh up TAG          create TAG-sw (the bridge) and the hosts TAG-zk1..3, TAG-b1..5, TAG-client
#   scripts/hosts.sh down TAG        kill every process in TAG's namespaces and delete them
#   scripts/hosts.sh reap            `down` every test topology whose owning process has gone
#   scripts/hosts.sh addr HOST       the address of zk1..3, b1..5 or client
#   scripts/hosts.sh isolate TAG HOST    HOST's link down: it reaches no one, no one reaches it
#   scripts/hosts.sh cut TAG "H H.." "H H.."   no traffic between the two groups, either way
#   scripts/hosts.sh oneway TAG FROM TO  FROM's packets to TO are dropped; TO's reach FROM
#   scripts/hosts.sh slow TAG HOST KBIT  HOST's link shaped to KBIT kbit/s each way (tbf; netem is
#                                        not in this kernel, so no added delay or random loss)
#   scripts/hosts.sh heal TAG        every link up, no dropped routes, no shaping
#   scripts/hosts.sh exec TAG HOST CMD...  run CMD on HOST
#
# Nothing is created in the machine's own namespace: each veth pair is made with one end in a
# host's namespace (named eth0 there) and the other in TAG-sw, so deleting the namespaces
# removes every interface. A tag of the form gt<PID>x<N> belongs to process PID; `reap` removes
# such a topology once PID has exited (a test killed before its cleanup ran).
# Partitions are blackhole routes in the sending host's namespace: connections across the cut
# stall, as in a real partition, and new connects fail at once. Needs root and iproute2.
set -euo pipefail

HOSTS="zk1 zk2 zk3 b1 b2 b3 b4 b5 client"

addr() {
  case "$1" in
    zk[1-3]) echo "198.18.0.1${1#zk}" ;;
    b[1-9]) echo "198.18.0.2${1#b}" ;;
    client) echo 198.18.0.100 ;;
    *) echo "unknown host '$1' (zk1..zk3, b1..b5, client)" >&2; return 2 ;;
  esac
}

exists() { ip netns list | awk '{print $1}' | grep -qx "$1"; }

up() {
  local tag=$1 h
  if exists "$tag-sw"; then
    echo "hosts $tag already exist (scripts/hosts.sh down $tag removes them)" >&2
    return 1
  fi
  ip netns add "$tag-sw"
  ip -n "$tag-sw" link add br0 type bridge
  ip -n "$tag-sw" link set br0 up
  for h in $HOSTS; do
    ip netns add "$tag-$h"
    ip link add eth0 netns "$tag-$h" type veth peer name "$h" netns "$tag-sw"
    ip -n "$tag-sw" link set "$h" master br0
    ip -n "$tag-sw" link set "$h" up
    ip -n "$tag-$h" addr add "$(addr "$h")/24" dev eth0
    ip -n "$tag-$h" link set eth0 up
    ip -n "$tag-$h" link set lo up
  done
}

down() {
  local tag=$1 ns pids
  for ns in $(ip netns list | awk '{print $1}' | grep "^$tag-" || true); do
    # Never this script or its caller, whichever namespace they run in.
    pids=$(ip netns pids "$ns" 2>/dev/null | grep -vx -e "$$" -e "$PPID" || true)
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
  done
  for ns in $(ip netns list | awk '{print $1}' | grep "^$tag-" || true); do
    ip netns del "$ns"
  done
}

reap() {
  local tag pid
  for tag in $(ip netns list | awk '{print $1}' | sed -n 's/^\(gt[0-9]*x[0-9]*\)-sw$/\1/p'); do
    pid=${tag#gt}
    pid=${pid%x*}
    kill -0 "$pid" 2>/dev/null || down "$tag"
  done
}

heal() {
  local tag=$1 h
  for h in $HOSTS; do
    exists "$tag-$h" || continue
    ip -n "$tag-sw" link set "$h" up
    ip -n "$tag-$h" route flush type blackhole
    tc -n "$tag-sw" qdisc del dev "$h" root 2>/dev/null || true
    tc -n "$tag-$h" qdisc del dev eth0 root 2>/dev/null || true
  done
}

drop() { ip -n "$1-$2" route replace blackhole "$(addr "$3")/32"; }

cmd=${1:-}
shift || true
case "$cmd" in
  up) up "${1:?tag}" ;;
  down) down "${1:?tag}" ;;
  reap) reap ;;
  addr) addr "${1:?host}" ;;
  isolate) addr "${2:?host}" >/dev/null && ip -n "${1:?tag}-sw" link set "$2" down ;;
  cut)
    tag=${1:?tag}
    for a in ${2:?first group}; do
      for b in ${3:?second group}; do
        drop "$tag" "$a" "$b"
        drop "$tag" "$b" "$a"
      done
    done
    ;;
  oneway) drop "${1:?tag}" "${2:?from}" "${3:?to}" ;;
  slow)
    tag=${1:?tag}; host=${2:?host}; addr "$host" >/dev/null
    shape=(root tbf rate "${3:?kbit}kbit" burst 16kbit latency 500ms)
    tc -n "$tag-sw" qdisc replace dev "$host" "${shape[@]}"
    tc -n "$tag-$host" qdisc replace dev eth0 "${shape[@]}"
    ;;
  heal) heal "${1:?tag}" ;;
  exec) tag=${1:?tag}; host=${2:?host}; shift 2; exec ip netns exec "$tag-$host" "$@" ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
