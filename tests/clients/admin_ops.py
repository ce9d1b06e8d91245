"""Topic administration through a real admin client, driven by `tests/admin_clients.rs`.

usage: admin_ops.py CLIENT BOOTSTRAP PREFIX
CLIENT is `confluent` (confluent-kafka's AdminClient, librdkafka) or `kafka-python`
(KafkaAdminClient). Runs a fixed sequence of operations on topics named PREFIX-*, one topic
per request, and prints one line per operation: `OP TOPIC CODE` with Kafka's error code (0 for
success). After the first create it produces one message to that topic with the same client
library and prints `produced TOPIC OFFSET`: a topic must be usable once its creation is
acknowledged. Then it describes: `config TOPIC KEY VALUE` for PREFIX-a1's timestamp type,
`config broker-1 num.partitions VALUE`, `config broker-1 KEY VALUE SOURCE` for each of SOURCED
(Kafka's ConfigSource: 4 set in server.properties, 5 a default), `config PREFIX-nope CODE` (`none` through kafka-python,
which keeps no per-resource error), `cluster BROKERS CONTROLLER_KNOWN`, `listed TOPICS...` (all
topics, PREFIX-* among them), and `groups ERRORS GROUPS...` after committing an offset for the
group PREFIX-g (ListGroups, which both clients send to every broker)."""
import sys

client, bootstrap, prefix = sys.argv[1:4]
# A key the test's server.properties sets, and keys DescribeConfigs once left out.
SOURCED = ["replica.lag.time.max.ms", "group.max.size", "max.connections.per.ip"]
SOURCE_CODES = {"STATIC_BROKER_CONFIG": 4, "DEFAULT_CONFIG": 5}
T = lambda name: "%s-%s" % (prefix, name)  # noqa: E731


def say(*parts):
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


# (op, topic, arguments); `create` takes partitions, replication factor, configs, an explicit
# assignment and validate_only; `partitions` a new count; `delete` nothing.
STEPS = [
    ("create", T("a1"), (3, 2, {"message.timestamp.type": "LogAppendTime"}, None, False)),
    ("create", T("a2"), (None, None, {}, [[1, 2], [2, 3]], False)),
    ("create", T("a1"), (1, 1, {}, None, False)),                      # exists
    ("create", "bad/name", (1, 1, {}, None, False)),                   # invalid name
    ("create", T("a3"), (1, 9, {}, None, False)),                      # rf above the brokers
    ("create", T("a4"), (1, 1, {"no.such.key": "1"}, None, False)),    # unknown config
    ("create", T("a5"), (1, 1, {"message.timestamp.type": "Sometimes"}, None, False)),
    ("create", T("a6"), (2, 1, {}, None, True)),                       # validate only
    ("create", T("a7"), (None, None, {}, [[1, 9]], False)),            # broker 9 is not live
    ("partitions", T("a1"), 5),
    ("partitions", T("a1"), 2),                                        # not more
    ("partitions", T("nope"), 2),                                      # unknown topic
    ("delete", T("a2"), None),
    ("delete", T("nope"), None),
]


def run_confluent():
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    a = AdminClient({"bootstrap.servers": bootstrap})

    def code(fut):
        try:
            fut.result()
            return 0
        except KafkaException as e:
            return e.args[0].code()

    for op, topic, args in STEPS:
        if op == "create":
            parts, rf, configs, assignment, validate = args
            if assignment is not None:
                nt = NewTopic(topic, num_partitions=len(assignment), replication_factor=-1,
                              replica_assignment=assignment, config=configs)
            else:
                nt = NewTopic(topic, num_partitions=parts, replication_factor=rf, config=configs)
            fs = a.create_topics([nt], operation_timeout=20, validate_only=validate)
        elif op == "partitions":
            fs = a.create_partitions([NewPartitions(topic, args)], operation_timeout=20)
        else:
            fs = a.delete_topics([topic], operation_timeout=20)
        say(op, topic, code(fs[topic]))
        if (op, topic) == ("create", T("a1")) and not hasattr(run_confluent, "produced"):
            run_confluent.produced = True
            p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
            got = []
            p.produce(topic, b"first", partition=0,
                      on_delivery=lambda err, m: got.append((err, m.offset())))
            p.flush(20)
            say("produced", topic, got[0][1] if got and got[0][0] is None else got)
    from confluent_kafka.admin import ConfigResource, ResourceType

    topic = ConfigResource(ResourceType.TOPIC, T("a1"))
    entry = a.describe_configs([topic])[topic].result()["message.timestamp.type"]
    say("config", T("a1"), entry.name, entry.value)
    broker = ConfigResource(ResourceType.BROKER, "1")
    described = a.describe_configs([broker])[broker].result()
    say("config", "broker-1", "num.partitions", described["num.partitions"].value)
    for k in SOURCED:
        say("config", "broker-1", k, described[k].value, int(described[k].source))
    nope = ConfigResource(ResourceType.TOPIC, T("nope"))
    say("config", T("nope"), code(a.describe_configs([nope])[nope]))
    cluster = a.describe_cluster().result()
    say("cluster", len(cluster.nodes), int(cluster.controller is not None))
    # All topics, as the AdminClient reads them after every delete_topics.
    say("listed", *sorted(t for t in a.list_topics(timeout=10).topics if t.startswith(prefix + "-")))
    # A group with committed offsets, then every group: librdkafka asks every broker.
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": T("g"), "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(T("a1"), 0, 1)], asynchronous=False)
    c.close()
    groups = a.list_consumer_groups(request_timeout=10).result()
    say("groups", len(groups.errors), *sorted(g.group_id for g in groups.valid if g.group_id.startswith(prefix + "-")))


def run_kafka_python():
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
    from kafka.errors import KafkaError

    a = KafkaAdminClient(bootstrap_servers=bootstrap)

    def code(f):
        try:
            f()
            return 0
        except KafkaError as e:
            return e.errno

    produced = False
    for op, topic, args in STEPS:
        if op == "create":
            parts, rf, configs, assignment, validate = args
            if assignment is not None:
                nt = NewTopic(topic, -1, -1, topic_configs=configs,
                              replica_assignments={i: r for i, r in enumerate(assignment)})
            else:
                nt = NewTopic(topic, parts, rf, topic_configs=configs)
            c = code(lambda: a.create_topics([nt], timeout_ms=20000, validate_only=validate))
        elif op == "partitions":
            c = code(lambda: a.create_partitions({topic: NewPartitions(args)}, timeout_ms=20000))
        else:
            c = code(lambda: a.delete_topics([topic], timeout_ms=20000))
        say(op, topic, c)
        if (op, topic) == ("create", T("a1")) and not produced:
            produced = True
            p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
            md = p.send(topic, b"first", partition=0).get(timeout=20)
            say("produced", topic, md.offset)
            p.close()
    from kafka.admin import ConfigResource, ConfigResourceType

    got = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, T("a1"))], config_filter="all")
    (configs,) = [v for t in got.values() for v in t.values()]
    say("config", T("a1"), "message.timestamp.type", configs["message.timestamp.type"]["value"])
    got = a.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
    (configs,) = [v for t in got.values() for v in t.values()]
    say("config", "broker-1", "num.partitions", configs["num.partitions"]["value"])
    for k in SOURCED:
        source = configs[k]["config_source"]  # kafka-python names it
        say("config", "broker-1", k, configs[k]["value"], SOURCE_CODES.get(source, source))
    # kafka-python drops a resource's error code and returns no configs for it.
    got = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, T("nope"))])
    say("config", T("nope"), "none" if not any(v for t in got.values() for v in t.values()) else got)
    cluster = a.describe_cluster()
    say("cluster", len(cluster["brokers"]), int(cluster["controller_id"] >= 1))
    say("listed", *sorted(t for t in a.list_topics() if t.startswith(prefix + "-")))
    # A group with committed offsets, then every group: kafka-python asks every broker and
    # fails on any error.
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=T("g"), enable_auto_commit=False)
    c.commit({TopicPartition(T("a1"), 0): OffsetAndMetadata(1, "", -1)})
    c.close()
    names = [g["group_id"] if isinstance(g, dict) else g[0] for g in a.list_groups()]
    say("groups", 0, *sorted(n for n in names if n.startswith(prefix + "-")))
    # OffsetDelete (kafka-consumer-groups.sh --delete-offsets), then what is left.
    tp = TopicPartition(T("a1"), 0)
    result = a.delete_group_offsets(T("g"), [tp])
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=T("g"), enable_auto_commit=False)
    say("deleted", [getattr(v, "errno", v) for v in result.values()], c.committed(tp))
    c.close()
    a.close()


{"confluent": run_confluent, "kafka-python": run_kafka_python}[client]()
