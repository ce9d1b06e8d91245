#!/usr/bin/env bash
# Runs ZooKeeper and N gregor brokers on 127.0.0.1, with data and logs under one folder.
#   scripts/cluster.sh start N | stop | status | kill ID | restart ID
#   scripts/cluster.sh --secure start N   (then stop, status, kill, restart as above)
#     SASL_SSL listeners: a CA and broker certificates made with openssl under GREGOR_HOME/tls,
#     SCRAM-SHA-512 user `admin` (password in GREGOR_HOME/tls/admin.password) as the brokers'
#     own login and the only super user, ACLs on; prints the client settings (kcat, and
#     GREGOR_HOME/client.properties for gregor's and Kafka's tools).
#   scripts/cluster.sh --hosts start | stop | status | isolate HOST | heal | ...
#     (hosts on their own addresses and a ZooKeeper ensemble: scripts/cluster_hosts.sh)
# GREGOR_HOME (default .gregor/cluster) holds everything; ZK_PORT (2181) and BASE_PORT (9092:
# broker i listens on BASE_PORT+i-1) choose the ports; GREGOR_BIN the binary (built if absent);
# BROKER_PROPERTIES (lines of key=value) is added to every broker's server.properties.
# METRICS_BASE_PORT (9404): broker i serves Prometheus metrics on http://127.0.0.1:METRICS_BASE_PORT+i-1/metrics;
# METRICS_BASE_PORT=off serves none.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --hosts ]; then
  shift
  exec "$here/cluster_hosts.sh" "$@"
fi
secure_asked=
if [ "${1:-}" = --secure ]; then
  secure_asked=1
  shift
fi
. "$here/lib.sh"
cd "$here/.."

home=${GREGOR_HOME:-.gregor/cluster}
zk_port=${ZK_PORT:-2181}
base_port=${BASE_PORT:-9092}
metrics_base=${METRICS_BASE_PORT:-9404}
bin=${GREGOR_BIN:-target/release/gregor}
export ZK_PORT=$zk_port

ensure_binary() {
  [ -x "$bin" ] || cargo build --release --quiet
}

broker_dir() { echo "$home/broker-$1"; }
tls_dir() { echo "$home/tls"; }
# A cluster started with --secure stays secure for restart: the marker says so.
is_secure() { [ -n "$secure_asked" ] || [ -f "$home/secure" ]; }

# The CA, and a certificate for 127.0.0.1 and localhost per broker: key (PKCS#8) and chain
# in one PEM file, as KIP-651 reads a keystore.
make_certificates() {
  local dir n=$1 id
  dir=$(tls_dir)
  mkdir -p "$dir"
  chmod 700 "$dir"
  if [ ! -f "$dir/ca.pem" ]; then
    echo "making a CA and broker certificates with openssl in $dir ..."
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 365 -subj "/O=gregor/CN=gregor-local-ca" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$dir/ext"
  fi
  for id in $(seq 1 "$n"); do
    [ -f "$dir/broker-$id.pem" ] && continue
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$dir/broker-$id.key" -out "$dir/broker-$id.csr" -subj "/O=gregor/CN=broker-$id" 2>/dev/null
    openssl x509 -req -in "$dir/broker-$id.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
      -CAcreateserial -out "$dir/broker-$id.crt" -days 365 -extfile "$dir/ext" 2>/dev/null
    openssl pkcs8 -topk8 -nocrypt -in "$dir/broker-$id.key" -out "$dir/broker-$id.pk8"
    cat "$dir/broker-$id.pk8" "$dir/broker-$id.crt" >"$dir/broker-$id.pem"
    chmod 600 "$dir/broker-$id.pem" "$dir/broker-$id.key" "$dir/broker-$id.pk8"
  done
  [ -f "$dir/admin.password" ] || (umask 077; openssl rand -hex 16 >"$dir/admin.password")
}

admin_password() { cat "$(tls_dir)/admin.password"; }

# The admin user, straight into ZooKeeper before any broker starts (Kafka's way).
make_admin_user() {
  "$bin" configs --zookeeper "127.0.0.1:$zk_port/gregor" --alter \
    --add-config "SCRAM-SHA-512=[iterations=8192,password=$(admin_password)]" \
    --entity-type users --entity-name admin >/dev/null
}

jaas_admin() {
  echo "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"$(admin_password)\";"
}

secure_properties() {
  local id=$1 port=$2 dir
  dir=$(cd "$(tls_dir)" && pwd)
  cat <<P
listeners=SASL_SSL://127.0.0.1:$port
inter.broker.listener.name=SASL_SSL
ssl.keystore.location=$dir/broker-$id.pem
ssl.truststore.location=$dir/ca.pem
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$(jaas_admin)
authorizer.class.name=kafka.security.authorizer.AclAuthorizer
super.users=User:admin
P
}

print_client_settings() {
  local dir
  dir=$(cd "$(tls_dir)" && pwd)
  cat >"$home/client.properties" <<P
security.protocol=SASL_SSL
ssl.truststore.type=PEM
ssl.truststore.location=$dir/ca.pem
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=$(jaas_admin)
P
  chmod 600 "$home/client.properties"
  echo
  echo "SASL_SSL with SCRAM-SHA-512; the admin user's password is in $dir/admin.password. kcat:"
  echo "  kcat -b 127.0.0.1:$base_port -X security.protocol=SASL_SSL -X ssl.ca.location=$dir/ca.pem \\"
  echo "       -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=admin -X sasl.password=\$(cat $dir/admin.password) -L"
  echo "gregor's and Kafka's tools: --command-config $home/client.properties"
  echo "more users: $bin configs -b 127.0.0.1:$base_port --command-config $home/client.properties \\"
  echo "       --alter --add-config 'SCRAM-SHA-512=[password=…]' --entity-type users --entity-name alice"
  echo "and their rights: $bin acls -b 127.0.0.1:$base_port --command-config $home/client.properties \\"
  echo "       --add --allow-principal User:alice --operation Read --topic orders"
}
broker_port() { echo $((base_port + $1 - 1)); }
metrics_line() { [ "$metrics_base" = off ] || echo "metrics.listener=127.0.0.1:$((metrics_base + $1 - 1))"; }
broker_pid() { cat "$(broker_dir "$1")/pid" 2>/dev/null || true; }
broker_alive() { local p; p=$(broker_pid "$1"); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_broker() {
  local id=$1 dir port
  dir=$(broker_dir "$id")
  port=$(broker_port "$id")
  mkdir -p "$dir"
  if broker_alive "$id"; then
    echo "broker $id already running (pid $(broker_pid "$id"))"
    return
  fi
  local listeners="listeners=PLAINTEXT://127.0.0.1:$port"
  is_secure && listeners=$(secure_properties "$id" "$port")
  cat >"$dir/server.properties" <<P
broker.id=$id
$listeners
log.dirs=$(cd "$dir" && pwd)/data
zookeeper.connect=127.0.0.1:$zk_port/gregor
zookeeper.session.timeout.ms=6000
default.replication.factor=1
num.partitions=1
$(metrics_line "$id")
${BROKER_PROPERTIES:-}
P
  nohup "$bin" broker --config "$dir/server.properties" >>"$dir/broker.log" 2>&1 &
  echo $! >"$dir/pid"
  if ! wait_for "port_open $port" 30; then
    echo "broker $id did not start; see $dir/broker.log" >&2
    tail -5 "$dir/broker.log" >&2
    exit 1
  fi
  local metrics=""
  [ "$metrics_base" = off ] || metrics=", metrics http://127.0.0.1:$((metrics_base + id - 1))/metrics"
  echo "broker $id listening on 127.0.0.1:$port (pid $(broker_pid "$id"), log $dir/broker.log$metrics)"
}

stop_broker() {
  local id=$1 pid
  pid=$(broker_pid "$id")
  if broker_alive "$id"; then
    kill -TERM "$pid"
    wait_for "! kill -0 $pid 2>/dev/null" 60 || kill -9 "$pid"
    echo "broker $id stopped"
  fi
  rm -f "$(broker_dir "$id")/pid"
}

broker_ids() {
  ls -d "$home"/broker-* 2>/dev/null | sed 's/.*broker-//' | sort -n
}

case "${1:-}" in
  start)
    n=${2:?usage: scripts/cluster.sh start N}
    ensure_binary
    "$here/zk.sh" start "$home/zk"
    if is_secure; then
      mkdir -p "$home"
      touch "$home/secure"
      make_certificates "$n"
      make_admin_user
    fi
    for id in $(seq 1 "$n"); do start_broker "$id"; done
    if is_secure; then print_client_settings; fi
    ;;
  stop)
    for id in $(broker_ids); do stop_broker "$id"; done
    "$here/zk.sh" stop "$home/zk"
    rm -f "$home/secure"
    ;;
  status)
    "$here/zk.sh" status "$home/zk" || true
    for id in $(broker_ids); do
      if broker_alive "$id"; then
        echo "broker $id: running, pid $(broker_pid "$id"), 127.0.0.1:$(broker_port "$id")"
      else
        echo "broker $id: stopped"
      fi
    done
    if zk_serving "$zk_port"; then
      "$bin" topics --zookeeper "127.0.0.1:$zk_port/gregor" --describe || true
    fi
    ;;
  kill)
    id=${2:?usage: scripts/cluster.sh kill ID}
    [ -d "$(broker_dir "$id")" ] || { echo "no broker $id in $home" >&2; exit 1; }
    broker_alive "$id" || { echo "broker $id is not running" >&2; exit 1; }
    pid=$(broker_pid "$id")
    kill -9 "$pid" && echo "broker $id killed (kill -9 $pid)"
    rm -f "$(broker_dir "$id")/pid"
    ;;
  restart)
    id=${2:?usage: scripts/cluster.sh restart ID}
    [ -d "$(broker_dir "$id")" ] || { echo "no broker $id in $home" >&2; exit 1; }
    ensure_binary
    stop_broker "$id"
    start_broker "$id"
    ;;
  *)
    echo "usage: scripts/cluster.sh [--secure] start N | stop | status | kill ID | restart ID" >&2
    echo "       scripts/cluster.sh --hosts start | stop | status | isolate HOST | heal | ..." >&2
    exit 2
    ;;
esac
