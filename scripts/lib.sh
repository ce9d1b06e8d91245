# Shared helpers for gregor's scripts. Sourced, not run.

# Installs Debian packages that are missing (the scripts run as root on CI and dev machines;
# elsewhere sudo is used when present). Says what it installs; when apt fails, its output is
# shown and the script stops with what to do.
ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo="sudo"
  echo "installing ${missing[*]} with apt-get ..." >&2
  local log
  log=$(mktemp)
  if ! { $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "could not install ${missing[*]} (apt-get's output is above): install them by hand, as root, and run this again" >&2
    exit 1
  fi
  rm -f "$log"
}

# A JDK (javac and java) for the Java clients and Kafka's tools: any JDK on the PATH will do;
# Debian's default-jdk-headless is installed only when there is none.
ensure_jdk() {
  command -v javac >/dev/null && command -v java >/dev/null && return 0
  ensure_packages default-jdk-headless
}

# The Python clients of the suite and the chaos run, pinned, in a virtual environment of the
# project's own (target/python-venv; never the system's Python): kafka-python (with snappy),
# confluent-kafka (librdkafka in its wheel), aiokafka.
PYTHON_VENV=target/python-venv
ensure_python_clients() {
  local venv=$PYTHON_VENV
  "$venv/bin/python" -c 'import kafka, snappy, confluent_kafka, aiokafka, kazoo' 2>/dev/null && return 0
  echo "installing the Python clients into the virtual environment $venv ..." >&2
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" 2>/dev/null || { ensure_packages python3-venv; python3 -m venv "$venv"; }
  fi
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    kafka-python==3.0.12 python-snappy==0.7.3 confluent-kafka==2.16.1 aiokafka==0.14.0 \
    kazoo==2.11.0; then
    echo "could not install the Python clients with pip (its output is above): PyPI must be reachable" >&2
    exit 1
  fi
}

# The official Java client (kafka-clients 4.3.0 and the jars it loads) from Maven Central, by
# the pom in tests/clients/java, into target/java-clients.
ensure_java_client() {
  ensure_maven_jars tests/clients/java/pom.xml target/java-clients kafka-clients-4.3.0.jar \
    "the Java client (kafka-clients 4.3.0 and its jars)"
}

# Copies a pom's dependencies from Maven Central into DIR unless DIR/JAR is there already:
#   ensure_maven_jars POM DIR JAR WHAT
ensure_maven_jars() {
  local pom=$1 dir=$2 jar=$3 what=$4
  [ -f "$dir/$jar" ] && return 0
  ensure_jdk
  command -v mvn >/dev/null || ensure_packages maven
  echo "installing $what from Maven Central into $dir ..." >&2
  # Maven 3.8 colours its output whatever it is told; the colour codes are taken out.
  local part=$dir.part
  [[ $part = /* ]] || part=$PWD/$part
  if ! mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$part" 2>&1 |
    sed -e 's/\x1b\[[0-9;]*m//g' >&2; then
    echo "could not fetch $what with Maven (its output is above): Maven Central must be reachable" >&2
    rm -rf "$dir.part"
    exit 1
  fi
  rm -rf "$dir"
  mv "$dir.part" "$dir"
}

# cargo, and the formatter and linter the suite runs: installed with rustup when missing
# (a minimal rustup profile has neither), skipped with a message where there is no rustup.
ensure_rust_tools() {
  command -v cargo >/dev/null || { echo "cargo is needed: install Rust with rustup (https://rustup.rs)" >&2; exit 1; }
  local c missing=()
  cargo fmt --version >/dev/null 2>&1 || missing+=(rustfmt)
  cargo clippy --version >/dev/null 2>&1 || missing+=(clippy)
  [ ${#missing[@]} -eq 0 ] && return 0
  if command -v rustup >/dev/null; then
    echo "installing the Rust components ${missing[*]} with rustup ..." >&2
    rustup component add "${missing[@]}" >&2 || { echo "rustup could not add ${missing[*]}" >&2; exit 1; }
  else
    for c in "${missing[@]}"; do
      echo "no $c and no rustup to install it: the suite skips the check it makes" >&2
    done
  fi
}

# Asks a ZooKeeper on 127.0.0.1:$1 for `srvr`; succeeds once it serves sessions.
# ZooKeeper answers `srvr` and closes; one that accepted before it could answer (seen while
# it starts) would leave the read waiting, so the probe has a deadline.
zk_serving() {
  local out
  out=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf srvr >&3 && cat <&3' "$1" 2>/dev/null) || return 1
  [[ "$out" == *"Mode:"* ]]
}

# Waits up to $2 seconds for `$1` (a command) to succeed.
wait_for() {
  local cmd=$1 secs=$2 i
  for ((i = 0; i < secs * 10; i++)); do
    eval "$cmd" && return 0
    sleep 0.1
  done
  return 1
}

# Apache Kafka 4.4's own tools and client (kafka-tools and what it needs) from Maven Central,
# by the pom in tests/clients/kafka-tools, into target/kafka-tools, for the tests that run
# Kafka's VerifiableProducer, ProducerPerformance and ConsumerPerformance against gregor.
ensure_kafka_tools() {
  ensure_maven_jars tests/clients/kafka-tools/pom.xml target/kafka-tools kafka-tools-4.4.0.jar \
    "Apache Kafka's tools (kafka-tools 4.4.0 and its jars)"
}

# Kafka Streams (4.4.0) for tests/kafka_apps/streams.rs.
ensure_streams() {
  ensure_maven_jars tests/clients/streams/pom.xml target/streams kafka-streams-4.4.0.jar \
    "Kafka Streams (kafka-streams 4.4.0 and its jars)"
}

# Kafka Connect's distributed worker and file connectors (4.3.1) for tests/kafka_apps/connect.rs.
ensure_connect() {
  ensure_maven_jars tests/clients/connect/pom.xml target/connect connect-runtime-4.3.1.jar \
    "Kafka Connect (connect-runtime and connect-file 4.3.1 and their jars)"
}
