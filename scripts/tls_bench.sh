#!/usr/bin/env bash
# What TLS costs (doc/performance.md, "TLS"): three release brokers it starts itself (a
# temporary folder, ports from TBENCH_BASE, default 39092), each with a PLAINTEXT, an SSL and
# a SASL_SSL listener (SCRAM-SHA-512), certificates made with openssl; then, runs alternated
# plaintext / TLS on the same brokers (TBENCH_RUNS pairs, default 3):
#   1. gregor perf produce, replication factor 3, acks=all (TBENCH_MESSAGES, default 2000000);
#   2. gregor perf consume of what was produced;
#   3. kcat (librdkafka) producing 1,000,000 lines of 100 bytes with acks=all;
# each pair printed with its TLS / plaintext ratio; and gregor perf connect: connections per
# second completing a TLS handshake, and a TLS handshake with a SCRAM-SHA-512 login.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/.."
ensure_packages zookeeper kcat openssl
cargo build --release --quiet
G=$PWD/target/release/gregor
base=${TBENCH_BASE:-39092}
runs=${TBENCH_RUNS:-3}
messages=${TBENCH_MESSAGES:-2000000}
work=$(mktemp -d /tmp/gregor-tbench.XXXXXX)
export ZK_PORT=$((base - 1))
cleanup() {
  for p in "$work"/broker-*/pid; do [ -f "$p" ] && kill -TERM "$(cat "$p")" 2>/dev/null || true; done
  sleep 2
  "$here/zk.sh" stop "$work/zk" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# One certificate for 127.0.0.1 serves every broker here.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/ca.key" \
  -out "$work/ca.pem" -days 2 -subj "/CN=tbench-ca" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/b.key" \
  -out "$work/b.csr" -subj "/CN=broker" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$work/ext"
openssl x509 -req -in "$work/b.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
  -out "$work/b.crt" -days 2 -extfile "$work/ext" 2>/dev/null
openssl pkcs8 -topk8 -nocrypt -in "$work/b.key" -out "$work/b.pk8"
cat "$work/b.pk8" "$work/b.crt" >"$work/broker.pem"

"$here/zk.sh" start "$work/zk" >/dev/null
zk="127.0.0.1:$ZK_PORT/tbench"
"$G" configs --zookeeper "$zk" --alter --add-config 'SCRAM-SHA-512=[password=bench-secret]' \
  --entity-type users --entity-name bench >/dev/null
plain_port() { echo $((base + $1)); }
ssl_port() { echo $((base + 10 + $1)); }
sasl_port() { echo $((base + 20 + $1)); }
for id in 1 2 3; do
  d="$work/broker-$id"
  mkdir -p "$d"
  cat >"$d/server.properties" <<P
broker.id=$id
listeners=PLAINTEXT://127.0.0.1:$(plain_port "$id"),SSL://127.0.0.1:$(ssl_port "$id"),SASL_SSL://127.0.0.1:$(sasl_port "$id")
inter.broker.listener.name=PLAINTEXT
log.dirs=$d/data
zookeeper.connect=$zk
ssl.keystore.location=$work/broker.pem
sasl.enabled.mechanisms=SCRAM-SHA-512
# perf connect opens thousands a second from one address.
max.connections.per.ip=100000
max.connections=100000
max.connection.creation.rate.per.ip=1000000
P
  nohup "$G" broker --config "$d/server.properties" >"$d/broker.log" 2>&1 &
  echo $! >"$d/pid"
done
for id in 1 2 3; do
  wait_for "(exec 3<>/dev/tcp/127.0.0.1/$(sasl_port "$id")) 2>/dev/null" 30
done
cat >"$work/ssl.properties" <<P
security.protocol=SSL
ssl.truststore.location=$work/ca.pem
P
cat >"$work/sasl.properties" <<P
security.protocol=SASL_SSL
ssl.truststore.location=$work/ca.pem
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bench" password="bench-secret";
P
plain_boot="127.0.0.1:$(plain_port 1),127.0.0.1:$(plain_port 2),127.0.0.1:$(plain_port 3)"
ssl_boot="127.0.0.1:$(ssl_port 1),127.0.0.1:$(ssl_port 2),127.0.0.1:$(ssl_port 3)"

rate() { sed -n 's/.* messages, \([0-9]*\) msg\/s.*/\1/p' | tail -1; }
fresh() {
  "$G" topics -b "$plain_boot" --delete --topic tb --if-exists >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do "$G" topics -b "$plain_boot" --list 2>/dev/null | grep -qx tb || break; sleep 0.2; done
  "$G" topics -b "$plain_boot" --create --topic tb --partitions 3 --replication-factor 3 >/dev/null
  sleep 2
}
produce() { # bootstrap [command-config]
  "$G" perf produce -b "$1" ${2:+--command-config "$2"} --topic tb --messages "$messages" --size 100 \
    --batch-size 200 --acks -1 --threads 2 2>&1 | rate
}
consume() {
  "$G" perf consume -b "$1" ${2:+--command-config "$2"} --topic tb --messages "$messages" 2>&1 | rate
}
seq 1 1000000 | awk '{printf "%0100d\n", $1}' >"$work/lines"
kcat_rate() { # bootstrap [extra -X ...]
  local b=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  kcat -P -b "$b" -t tb -X acks=all -X linger.ms=5 "$@" -l "$work/lines"
  t1=$(date +%s.%N)
  python3 -c "print(round(1000000 / ($t1 - $t0)))"
}
ratio() { python3 -c "print(round($2 / $1, 2) if $1 else 'n/a')"; }
for i in $(seq 1 "$runs"); do
  fresh; p=$(produce "$plain_boot"); c=$(consume "$plain_boot")
  fresh; t=$(produce "$ssl_boot" "$work/ssl.properties"); tc=$(consume "$ssl_boot" "$work/ssl.properties")
  echo "run $i produce RF3 acks=all msg/s: plaintext $p, TLS $t, ratio $(ratio "$p" "$t")"
  echo "run $i consume msg/s: plaintext $c, TLS $tc, ratio $(ratio "$c" "$tc")"
  fresh; k=$(kcat_rate "$plain_boot")
  fresh; kt=$(kcat_rate "$ssl_boot" -X security.protocol=SSL -X ssl.ca.location="$work/ca.pem")
  echo "run $i kcat produce msg/s: plaintext $k, TLS $kt, ratio $(ratio "$k" "$kt")"
done
for _ in 1 2; do
echo "TLS handshakes: $("$G" perf connect -b "127.0.0.1:$(ssl_port 1)" --command-config "$work/ssl.properties" --seconds 10 --threads 2)"
echo "TLS + SCRAM-SHA-512 logins: $("$G" perf connect -b "127.0.0.1:$(sasl_port 1)" --command-config "$work/sasl.properties" --seconds 10 --threads 2)"
echo "plaintext connections: $("$G" perf connect -b "127.0.0.1:$(plain_port 1)" --seconds 10 --threads 2)"
done
