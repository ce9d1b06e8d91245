"""confluent-kafka (librdkafka in its wheel) over a SASL or TLS listener of gregor, as the
security tests drive it:

  sasl_client.py <bootstrap> <mechanism> <user> <password> <mode> [args...]

SECURITY_PROTOCOL in the environment picks the listener's protocol (SASL_PLAINTEXT by
default; SSL with mechanism NONE logs in with no SASL), SSL_CA the PEM file of the CA to trust.

modes:
  create-user <name> <mechanism> <password>   AlterUserScramCredentials through the AdminClient
  describe-users                              DescribeUserScramCredentials: one line per user
  roundtrip <topic> <group> <count>           produce count messages, consume them in a group,
                                              commit; list topics and create <topic>-admin
  produce <topic> <count>                     produce count messages; exit 1 when refused
  produce-for <topic> <seconds>               a message every 20 ms for that long, each
                                              acknowledged; exit 1 on any failure
  produce-acked <topic> <count>               idempotent, acks=all, a few ms apart; prints
                                              `acked <value>` for each acknowledged message
  consume-group <topic> <group> <count>       read count messages in a group; exit 1 when refused
  create-acl <principal> <type> <name> <op> <ALLOW|DENY> [pattern]
  describe-acls                               one line per ACL
  delete-acls <principal>                     every ACL of the principal; one line per ACL removed
Prints what happened as `key value` lines; exits 1 with the error on any failure."""
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AdminClient, NewTopic, ResourcePatternType, ResourceType,
                                   ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

bootstrap, mechanism, user, password, mode = sys.argv[1:6]
rest = sys.argv[6:]
common = {
    "bootstrap.servers": bootstrap,
    "security.protocol": os.environ.get("SECURITY_PROTOCOL", "SASL_PLAINTEXT"),
}
if mechanism != "NONE":
    common.update({"sasl.mechanisms": mechanism, "sasl.username": user,
                   "sasl.password": password})
if os.environ.get("SSL_CA"):
    common["ssl.ca.location"] = os.environ["SSL_CA"]


def mechanism_of(name):
    return {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256,
            "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}[name]


if mode == "create-user":
    name, mech, secret = rest
    admin = AdminClient(common)
    up = UserScramCredentialUpsertion(name, ScramCredentialInfo(mechanism_of(mech), 8192),
                                      secret.encode())
    for u, f in admin.alter_user_scram_credentials([up]).items():
        f.result(30)
        print("created", u, mech)
elif mode == "describe-users":
    admin = AdminClient(common)
    described = admin.describe_user_scram_credentials()
    # Newer wheels answer a future of the whole description, older ones a dict of futures.
    if hasattr(described, "result"):
        described = described.result(30)
    for u, d in sorted(described.items()):
        if hasattr(d, "result"):
            d = d.result(30)
        infos = ",".join(f"{i.mechanism.name}:{i.iterations}" for i in d.scram_credential_infos)
        print("user", u, infos)
elif mode == "roundtrip":
    topic, group, count = rest[0], rest[1], int(rest[2])
    p = Producer(dict(common, **{"acks": "all", "enable.idempotence": True}))
    delivered = []

    def on_delivery(err, msg):
        if err is not None:
            print("delivery failed:", err, file=sys.stderr)
            sys.exit(1)
        delivered.append(msg.offset())

    for i in range(count):
        p.produce(topic, key=f"k{i}", value=f"{user}-{i}", on_delivery=on_delivery)
    if p.flush(30) != 0 or len(delivered) != count:
        sys.exit(f"only {len(delivered)} of {count} delivered")
    print("produced", count)
    c = Consumer(dict(common, **{"group.id": group, "auto.offset.reset": "earliest",
                                 "enable.auto.commit": False}))
    c.subscribe([topic])
    seen = set()
    deadline = time.time() + 60
    while len(seen) < count and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            sys.exit(f"consume error: {m.error()}")
        if m.value().decode().startswith(user + "-"):
            seen.add(m.value().decode())
    c.commit(asynchronous=False)
    c.close()
    print("consumed", len(seen))
    admin = AdminClient(common)
    md = admin.list_topics(timeout=30)
    print("topics", ",".join(sorted(t for t in md.topics if not t.startswith("__"))))
    for t, f in admin.create_topics([NewTopic(topic + "-admin", 1, 1)]).items():
        f.result(30)
        print("created-topic", t)
elif mode == "produce":
    topic, count = rest[0], int(rest[1])
    p = Producer(dict(common, **{"acks": "all", "message.timeout.ms": 10000}))
    failed = []
    for i in range(count):
        p.produce(topic, value=f"{user}-{i}",
                  on_delivery=lambda err, msg: err and failed.append(str(err)))
    p.flush(30)
    if failed:
        sys.exit(f"refused: {failed[0]}")
    print("produced", count)
elif mode == "produce-for":
    topic, seconds = rest[0], float(rest[1])
    p = Producer(dict(common, **{"acks": "all", "message.timeout.ms": 10000}))
    failed, sent = [], 0
    end = time.time() + seconds
    while time.time() < end:
        p.produce(topic, value=f"{user}-{sent}",
                  on_delivery=lambda err, msg: err and failed.append(str(err)))
        sent += 1
        p.poll(0.02)
    p.flush(30)
    if failed:
        sys.exit(f"failed: {failed[0]}")
    print("produced", sent)
elif mode == "produce-acked":
    topic, count = rest[0], int(rest[1])
    p = Producer(dict(common, **{"acks": "all", "enable.idempotence": True,
                                 "message.timeout.ms": 90000, "linger.ms": 0}))
    acked = []

    def on_delivery(err, msg):
        if err is None:
            acked.append(msg.value().decode())

    for i in range(count):
        p.produce(topic, value=f"v{i}", on_delivery=on_delivery)
        p.poll(0)
        time.sleep(0.002)
    p.flush(120)
    for v in acked:
        print("acked", v)
elif mode == "consume-group":
    topic, group, count = rest[0], rest[1], int(rest[2])
    c = Consumer(dict(common, **{"group.id": group, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got = 0
    deadline = time.time() + 30
    while got < count and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            sys.exit(f"refused: {m.error()}")
        got += 1
    c.close()
    if got < count:
        sys.exit(f"only {got} of {count} read")
    print("consumed", got)
elif mode == "create-acl":
    principal, rtype, name, op, perm = rest[:5]
    pattern = rest[5] if len(rest) > 5 else "LITERAL"
    b = AclBinding(ResourceType[rtype], name, ResourcePatternType[pattern], principal, "*",
                   AclOperation[op], AclPermissionType[perm])
    admin = AdminClient(common)  # kept: a collected client cancels its futures
    for _, f in admin.create_acls([b]).items():
        f.result(30)
    print("created", principal, rtype, name, op, perm)
elif mode == "describe-acls":
    f = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                         AclOperation.ANY, AclPermissionType.ANY)
    admin = AdminClient(common)
    for b in admin.describe_acls(f).result(30):
        print("acl", b.principal, b.restype.name, b.name, b.resource_pattern_type.name,
              b.operation.name, b.permission_type.name)
elif mode == "delete-acls":
    f = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, rest[0], None,
                         AclOperation.ANY, AclPermissionType.ANY)
    admin = AdminClient(common)
    for _, fut in admin.delete_acls([f]).items():
        for b in fut.result(30):
            print("deleted", b.principal, b.restype.name, b.name, b.operation.name)
else:
    sys.exit(f"unknown mode {mode}")
