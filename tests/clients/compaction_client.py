"""Compacted topics through confluent-kafka (librdkafka), driven by `tests/compaction.rs`.

usage: compaction_client.py MODE BOOTSTRAP ARGS...
  create TOPIC PARTITIONS RF KEY=VALUE...   CreateTopics with those configs; prints `created
                                            TOPIC CODE` (0, or Kafka's error code)
  produce TOPIC CODEC KEYS VERSIONS TOMB    KEYS keys x VERSIONS versions, version-major, one
                                            flush per version; key i's last version is a
                                            tombstone when i % TOMB == 0 (TOMB 0: none); then
                                            20 records of 300 random bytes per partition, keys
                                            `filler-*`, so that the segments holding the
                                            versions are no longer active; `last KEY PARTITION
                                            OFFSET` for each key's last version; `produced N`
  describe TOPIC KEY...                     DescribeConfigs of the topic: `config KEY VALUE
                                            SOURCE` for each KEY (Kafka's source name)
  alter TOPIC KEY=VALUE                     IncrementalAlterConfigs SET; `altered KEY CODE`
  keyless TOPIC                             one record without a key; prints `keyless ERROR`
                                            (the error's name, or `ok`)
  read TOPIC                                every record of every partition from the start to
                                            the high watermark: `rec PARTITION OFFSET KEY VALUE`
                                            (VALUE `-` for a tombstone,
                                            hex for a filler)
  read-kafka-python TOPIC                   the same through kafka-python, then `end COUNT`
"""
import sys

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

mode, bootstrap = sys.argv[1:3]
args = sys.argv[3:]


def say(*parts):
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


def create(topic, partitions, rf, *pairs):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = dict(p.split("=", 1) for p in pairs)
    t = NewTopic(topic, num_partitions=int(partitions), replication_factor=int(rf), config=config)
    try:
        admin.create_topics([t])[topic].result(30)
        say("created", topic, 0)
    except Exception as e:  # KafkaException carrying the broker's error
        err = e.args[0] if e.args else None
        say("created", topic, err.code() if hasattr(err, "code") else repr(e))


def produce(topic, codec, keys, versions, tomb):
    keys, versions, tomb = int(keys), int(versions), int(tomb)
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5,
                  "acks": "all", "enable.idempotence": True})
    failures = []
    lasts = []

    def delivered(last):
        def report(err, m):
            if err:
                failures.append(err)
            elif last:
                lasts.append((m.key().decode(), m.partition(), m.offset()))
        return report

    n = 0
    for v in range(versions):
        for i in range(keys):
            last = v == versions - 1
            value = None if (last and tomb and i % tomb == 0) else ("k%d-v%d" % (i, v)).encode()
            p.produce(topic, key=("k%d" % i).encode(), value=value, on_delivery=delivered(last))
            n += 1
            p.poll(0)
        p.flush(30)
    import os
    partitions = len(p.list_topics(topic, timeout=30).topics[topic].partitions)
    for part in range(partitions):
        for i in range(20):
            p.produce(topic, key=("filler-%d-%d" % (part, i)).encode(), value=os.urandom(300),
                      partition=part, on_delivery=lambda err, _m: err and failures.append(err))
    p.flush(30)
    if failures:
        say("failed", failures[0])
    for k, part, offset in lasts:
        say("last", k, part, offset)
    say("produced", n)


def describe(topic, *keys):
    from confluent_kafka.admin import ConfigResource, ConfigSource
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([res])[res].result(30)
    for k in keys:
        e = entries[k]
        say("config", k, e.value, ConfigSource(e.source).name)


def alter(topic, pair):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    admin = AdminClient({"bootstrap.servers": bootstrap})
    k, v = pair.split("=", 1)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)])
    try:
        admin.incremental_alter_configs([res])[res].result(30)
        say("altered", k, 0)
    except Exception as e:
        err = e.args[0] if e.args else None
        say("altered", k, err.code() if hasattr(err, "code") else repr(e))


def keyless(topic):
    p = Producer({"bootstrap.servers": bootstrap, "retries": 0})
    result = []
    p.produce(topic, value=b"no key", on_delivery=lambda err, _m: result.append(err))
    p.flush(30)
    err = result[0] if result else "timeout"
    say("keyless", "ok" if err is None else (err.name() if hasattr(err, "name") else err))


def show(partition, offset, key, value):
    v = "-" if value is None else value.hex() if key.startswith(b"filler") else value.decode()
    say("rec", partition, offset, key.decode(), v)


def read(topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compaction-reader",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    md = c.list_topics(topic, timeout=30).topics[topic]
    parts = sorted(md.partitions)
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    left = set(parts)
    # A partition is done at its end (EOF); an empty one is at its end at once.
    for p in parts:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
        if hi == 0:
            left.discard(p)
    count = 0
    while left:
        m = c.poll(10)
        if m is None:
            say("stalled", sorted(left))
            break
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                left.discard(m.partition())
                continue
            say("error", m.error())
            break
        show(m.partition(), m.offset(), m.key(), m.value())
        count += 1
    say("end", count)
    c.close()


def read_kafka_python(topic):
    from kafka import KafkaConsumer, TopicPartition as TP
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                      consumer_timeout_ms=10000)
    parts = [TP(topic, p) for p in sorted(c.partitions_for_topic(topic))]
    c.assign(parts)
    c.seek_to_beginning(*parts)
    ends = c.end_offsets(parts)
    count = 0
    while any(c.position(tp) < ends[tp] for tp in parts):
        got = c.poll(timeout_ms=10000)
        if not got:
            say("stalled", [(tp.partition, c.position(tp), ends[tp]) for tp in parts])
            break
        for recs in got.values():
            for m in recs:
                show(m.partition, m.offset, m.key, m.value)
                count += 1
    say("end", count)
    c.close()


{"create": create, "produce": produce, "keyless": keyless, "read": read, "describe": describe,
 "alter": alter, "read-kafka-python": read_kafka_python}[mode](*args)
