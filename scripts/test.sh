#!/usr/bin/env bash
# Installs what the tests need (ZooKeeper, kcat) and runs the whole test suite: unit tests,
# property tests and the integration tests, which start their own ZooKeeper and brokers on
# free ports of 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_packages zookeeper kcat
# kafka-python (and snappy for it) and confluent-kafka (librdkafka in its wheel) for the
# client-compatibility tests.
if ! python3 -c 'import kafka, snappy, confluent_kafka' 2>/dev/null; then
  python3 -m pip install -q --disable-pip-version-check kafka-python==3.0.12 python-snappy \
    confluent-kafka==2.16.1 2>&1 | grep -vi 'running pip as the' >&2 || true
fi
command -v cargo >/dev/null || { echo "cargo is needed (https://rustup.rs)" >&2; exit 1; }

# The code standards are part of the suite: formatted, and no clippy warning.
cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings
cargo build --all-targets --quiet
# Integration tests mostly wait on sockets and ZooKeeper, so a few run at once even on 2 cores.
cargo test --all-targets -- --test-threads="${GREGOR_TEST_THREADS:-4}"
