#!/usr/bin/env bash
# The fault-injection run (tests/chaos): ZooKeeper and 3 brokers on 127.0.0.1, producers with
# acks=all, a consumer group, and faults chosen by a seed; then the no-loss checker.
# With --hosts: a 3-node ZooKeeper ensemble and 5 brokers on hosts of their own (network
# namespaces, scripts/hosts.sh; needs root), and faults made in the network too.
#   scripts/chaos.sh [--hosts] [--minutes N] [--seed S]
# Prints one summary line; a failing run names its seed and keeps its logs under
# target/tmp/chaos-runs/. Installs what is missing first, like scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

minutes=30
seed=""
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --hosts) export CHAOS_HOSTS=1; shift ;;
    *) echo "usage: scripts/chaos.sh [--hosts] [--minutes N] [--seed S]" >&2; exit 2 ;;
  esac
done
ensure_packages zookeeper iproute2
# The run's idempotent producer and Kafka-protocol group are librdkafka (confluent-kafka).
ensure_python_clients
command -v cargo >/dev/null || { echo "cargo is needed (https://rustup.rs)" >&2; exit 1; }
export CHAOS_MINUTES="$minutes"
if [ -n "$seed" ]; then export CHAOS_SEED="$seed"; fi
cargo test --release --test chaos -- --nocapture
