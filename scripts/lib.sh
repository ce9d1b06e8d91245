# Shared helpers for gregor's scripts. Sourced, not run.

# Installs Debian packages that are missing (the scripts run as root on CI and dev machines;
# elsewhere sudo is used when present).
ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo="sudo"
  echo "installing ${missing[*]} ..." >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
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
# into target/kafka-tools, for the tests that run Kafka's VerifiableProducer and friends
# against gregor. Says what it does, and stops the script with what to do when it fails.
ensure_kafka_tools() {
  local dir=target/kafka-tools
  [ -f "$dir/kafka-tools-4.4.0.jar" ] && return 0
  command -v javac >/dev/null || ensure_packages default-jdk-headless
  command -v mvn >/dev/null || ensure_packages maven
  echo "installing Apache Kafka's tools (kafka-tools 4.4.0 and its jars, from Maven Central) into $dir ..." >&2
  if ! mvn -q -B -f tests/clients/kafka-tools/pom.xml dependency:copy-dependencies \
    -DoutputDirectory="$PWD/$dir.part" >&2; then
    echo "could not fetch kafka-tools 4.4.0 with Maven: Maven Central must be reachable (see the output above)" >&2
    rm -rf "$dir.part"
    exit 1
  fi
  rm -rf "$dir"
  mv "$dir.part" "$dir"
}
