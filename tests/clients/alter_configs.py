"""Changing a topic's configuration through a real admin client, and seeing it applied,
driven by `tests/admin_clients.rs`.

usage: alter_configs.py CLIENT BOOTSTRAP TOPIC
CLIENT is `confluent` (IncrementalAlterConfigs through librdkafka) or `kafka-python`
(IncrementalAlterConfigs, and AlterConfigs at the end). TOPIC exists with one partition and
two replicas. Prints one line per step: `alter KEY=VALUE CODE` (`KEY-` deletes), what a
producer then gets (`produce BYTES ACKS CODE`), `earliest_moved` once retention has removed
the first segments as the client sees it, and `describe KEY VALUE`."""
import sys
import time

client, bootstrap, topic = sys.argv[1:4]


def say(*parts):
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


def until(want, f, secs=30):
    """A change reaches the partition's leader by ZooKeeper's change notification, after the
    admin request is answered (as in Kafka): retry `f` until it gives `want` or time is up."""
    deadline = time.time() + secs
    got = f()
    while got != want and time.time() < deadline:
        time.sleep(0.1)
        got = f()
    return got


def run(alter, produce, earliest, describe):
    say("alter segment.bytes=1024", alter(topic, "segment.bytes", "1024"))
    for _ in range(300):
        produce(100, 1)
    say("produce 100x300 1", 0)
    say("alter retention.ms=1", alter(topic, "retention.ms", "1"))
    say("earliest_moved", until(1, lambda: int(earliest() > 0), 60))
    say("alter min.insync.replicas=3", alter(topic, "min.insync.replicas", "3"))
    say("produce 100 all", until(19, lambda: produce(100, -1)))
    say("alter min.insync.replicas-", alter(topic, "min.insync.replicas", None))
    say("produce 100 all", until(0, lambda: produce(100, -1)))
    say("alter max.message.bytes=200", alter(topic, "max.message.bytes", "200"))
    say("produce 1000 1", until(10, lambda: produce(1000, 1)))
    say("alter retention.ms=abc", alter(topic, "retention.ms", "abc"))
    say("alter cleanup.policy=archive", alter(topic, "cleanup.policy", "archive"))
    say("alter no.such.key=1", alter(topic, "no.such.key", "1"))
    say("alter nope:retention.ms=1", alter(topic + "-nope", "retention.ms", "1"))
    say("alter broker:num.partitions=3", alter(None, "num.partitions", "3"))
    say("describe retention.ms", describe("retention.ms"))


def confluent():
    from confluent_kafka import KafkaException, Producer, TopicPartition, Consumer
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, ResourceType)

    a = AdminClient({"bootstrap.servers": bootstrap})
    producers = {}

    def alter(t, key, value):
        res = (ConfigResource(ResourceType.TOPIC, t) if t else
               ConfigResource(ResourceType.BROKER, "1"))
        op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
        res.add_incremental_config(ConfigEntry(key, value, incremental_operation=op))
        try:
            a.incremental_alter_configs([res])[res].result()
            return 0
        except KafkaException as e:
            return e.args[0].code()

    def produce(size, acks):
        if acks not in producers:
            producers[acks] = Producer({"bootstrap.servers": bootstrap, "acks": acks,
                                        "retries": 0, "linger.ms": 0})
        p = producers[acks]
        got = []
        p.produce(topic, b"x" * size, partition=0, on_delivery=lambda err, m: got.append(err))
        p.flush(30)
        return 0 if got and got[0] is None else (got[0].code() if got else "none")

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "alter-configs"})

    def earliest():
        low, _ = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return low

    def describe(key):
        res = ConfigResource(ResourceType.TOPIC, topic)
        return a.describe_configs([res])[res].result()[key].value

    run(alter, produce, earliest, describe)
    c.close()


def kafka_python():
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient
    from kafka.errors import KafkaError

    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    producers = {}

    def alter(t, key, value, incremental=None):
        res = (ConfigResource(ConfigResourceType.TOPIC, t) if t else
               ConfigResource(ConfigResourceType.BROKER, "1"))
        res.configs = {key: (AlterConfigOp.SET, value) if value is not None
                       else (AlterConfigOp.DELETE, None)}
        if incremental is False:
            res.configs = {key: value}
        try:
            got = a.alter_configs([res], incremental=incremental)
        except KafkaError as e:
            return e.errno
        except ValueError:
            # kafka-python first checks the keys against DescribeConfigs and refuses, without
            # asking the broker, a key the resource does not list.
            return "refused"
        # {resource type: {name: 'OK' or "[Error N] Name: message"}}
        (outcome,) = [v for by_name in got.values() for v in by_name.values()]
        if outcome == "OK":
            return 0
        return int(outcome.split("]")[0].removeprefix("[Error "))

    def produce(size, acks):
        if acks not in producers:
            producers[acks] = KafkaProducer(bootstrap_servers=bootstrap, acks=acks if acks != -1 else "all",
                                            retries=0, linger_ms=0)
        try:
            producers[acks].send(topic, b"x" * size, partition=0).get(timeout=30)
            return 0
        except KafkaError as e:
            return e.errno

    c = KafkaConsumer(bootstrap_servers=bootstrap)
    tp = TopicPartition(topic, 0)

    def earliest():
        return c.beginning_offsets([tp])[tp]

    def describe(key):
        got = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        (configs,) = [v for t in got.values() for v in t.values()]
        return configs[key]["value"]

    run(alter, produce, earliest, describe)
    # AlterConfigs, the whole set at once: what it does not list is unset.
    say("replace retention.ms=5000", alter(topic, "retention.ms", "5000", incremental=False))
    say("describe retention.ms", describe("retention.ms"))
    say("describe segment.bytes", describe("segment.bytes"))
    for p in producers.values():
        p.close()
    c.close()
    a.close()


{"confluent": confluent, "kafka-python": kafka_python}[client]()
