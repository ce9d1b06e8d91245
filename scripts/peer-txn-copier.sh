#!/usr/bin/env bash
# librdkafka's consume-transform-produce copier (tests/clients/txn_client.py copy) against
# Apache Kafka 4.4 (scripts/peer-kafka.sh, three KRaft nodes): for each try, fill a topic,
# start the copier, kill -9 the group coordinator (the one the copier's consumer names) once it
# has copied a quarter, and see whether it goes on within 90 s. The check that the copier stall
# doc/transactions.md describes (confluentinc/librdkafka#5511, #5456) is the client's, not
# gregor's: it happens beside Kafka too.
#   scripts/peer-txn-copier.sh [TRIES]    (default 4; about 2 minutes a try)
# Prints one line per try; the copier's librdkafka logs (debug=eos,cgrp) are kept in
# target/tmp/peer-txn-copier/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_python_clients

tries=${1:-4}
export PEER_HOME=${PEER_HOME:-.gregor/peer-txn-copier} PEER_BASE_PORT=${PEER_BASE_PORT:-19192}
export PEER_PROPERTIES="min.insync.replicas=2
transaction.state.log.min.isr=2
transaction.state.log.num.partitions=3
offsets.topic.num.partitions=3"
out=target/tmp/peer-txn-copier
mkdir -p "$out"
py=target/python-venv/bin/python
bootstrap=$(for i in 0 1 2; do printf '127.0.0.1:%d,' $((PEER_BASE_PORT + i)); done)
bootstrap=${bootstrap%,}
copier=""
cleanup() {
  [ -n "$copier" ] && kill -9 "$copier" 2>/dev/null || true
  scripts/peer-kafka.sh stop >/dev/null
}
trap cleanup EXIT

scripts/peer-kafka.sh start 3 >/dev/null
stalled=0
for try in $(seq 1 "$tries"); do
  p=copy$try-$RANDOM
  for t in "$p-in" "$p-out"; do
    scripts/peer-kafka.sh tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" \
      --create --topic "$t" --partitions 3 --replication-factor 3 >/dev/null
  done
  "$py" tests/clients/txn_client.py fill "$bootstrap" "$p-in" 3000 >/dev/null 2>&1
  TXN_CLIENT_DEBUG=eos,cgrp "$py" tests/clients/txn_client.py copy "$bootstrap" "$p" "$p" \
    "$p-in" "$p-out" >"$out/$p.out" 2>"$out/$p.err" &
  copier=$!
  wait_for "[ \$(grep -c progress $out/$p.out) -ge 15 ]" 60
  node=$(grep -o "Group \"$p\" coordinator is [0-9.:]* id [0-9]*" "$out/$p.err" | tail -1 | awk '{print $NF}')
  before=$(grep progress "$out/$p.out" | tail -1)
  kill -9 "$(cat "$PEER_HOME/node-$node/pid")"
  sleep 90 # the observation window itself, not a wait for a condition
  after=$(grep -E 'progress|done' "$out/$p.out" | tail -1)
  kill -9 "$copier" 2>/dev/null || true
  copier=""
  if [ "$after" = "$before" ]; then stalled=$((stalled + 1)); fi
  echo "try $try: killed the group coordinator (node $node) at '$before'; 90 s later: '$after'"
  scripts/peer-kafka.sh start 3 >/dev/null
done
echo "copier stalled in $stalled of $tries tries against Apache Kafka 4.4"
