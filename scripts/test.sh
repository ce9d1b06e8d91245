#!/usr/bin/env bash
# Installs what the tests need (ZooKeeper, kcat, a JDK, the Python and Java Kafka clients, Apache
# Kafka's tools, Kafka Connect and Streams) and runs the whole test suite: unit tests,
# property tests and the integration tests, which start their own ZooKeeper and brokers on
# free ports of 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_packages zookeeper kcat iproute2
ensure_jdk

# Hosts of their own (network namespaces, scripts/hosts.sh) for tests/net_partitions.rs,
# tests/net_harness.rs and the chaos run's --hosts variant. Where one can be made here, those
# tests must run: a failure to make one later fails them instead of skipping.
probe="gregor-probe-$$"
if [ "$(id -u)" -eq 0 ] && ip netns add "$probe" 2>/dev/null; then
  ip netns del "$probe"
  export GREGOR_REQUIRE_HOSTS=1
  scripts/hosts.sh reap
else
  echo "no network namespaces here (they need root and iproute2): the multi-host tests say SKIPPED" >&2
fi

# The clients the tests drive (scripts/lib.sh says where each comes from): the Python clients
# in target/python-venv, the Java client in target/java-clients, Apache Kafka's own tools in
# target/kafka-tools, Kafka Connect in target/connect, Kafka Streams in target/streams.
ensure_python_clients
ensure_java_client
ensure_kafka_tools
ensure_connect
ensure_streams
ensure_rust_tools

# The code standards are part of the suite: formatted, and no clippy warning.
if cargo fmt --version >/dev/null 2>&1; then cargo fmt --all -- --check; fi
if cargo clippy --version >/dev/null 2>&1; then cargo clippy --all-targets --quiet -- -D warnings; fi
cargo build --all-targets --quiet
# Integration tests mostly wait on sockets and ZooKeeper, so a few run at once even on 2 cores.
# Every test binary runs even after one fails (--no-fail-fast), and the end names each failing
# test and its binary, so one failure hides nothing behind it.
log=target/test-output.log
set +e
cargo test --all-targets --no-fail-fast -- --test-threads="${GREGOR_TEST_THREADS:-4}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "== the suite failed; failing tests:" >&2
  grep -E '^test .* \.\.\. FAILED$' "$log" | sed -e 's/^test /  /' -e 's/ \.\.\. FAILED$//' | sort -u >&2
  echo "== in the test binaries (rerun one with cargo test --test NAME):" >&2
  grep -oE 'to rerun pass `[^`]*`' "$log" | sed -e 's/^to rerun pass /  /' | sort -u >&2
  echo "(the whole output is in $log; a failing cluster test keeps its brokers' logs in target/tmp/failed-clusters/)" >&2
  exit "$status"
fi
