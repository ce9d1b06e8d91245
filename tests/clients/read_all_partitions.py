"""Reads every record of every partition of a topic by assign() from the beginning, with the
fetch byte limits given, and says how many it read of each partition.

usage: read_all_partitions.py CLIENT BOOTSTRAP TOPIC PARTITIONS EXPECTED FETCH_MAX PARTITION_MAX
CLIENT is `confluent` (librdkafka: fetch.max.bytes, max.partition.fetch.bytes; its least
fetch.max.bytes is 1000) or `kafka-python` (fetch_max_bytes, max_partition_fetch_bytes).
Prints `read N` and exits 0 once it has EXPECTED records; after 90 s without them, or when
the client reports an error, exits non-zero naming the partitions it could not finish."""
import sys
import time

client, bootstrap, topic = sys.argv[1:4]
partitions, expected, fetch_max, partition_max = (int(a) for a in sys.argv[4:8])
counts = [0] * partitions
deadline = time.time() + 90


def finish():
    total = sum(counts)
    if total == expected:
        print("read %d" % total)
        sys.exit(0)
    sys.exit("read %d of %d; per partition: %s" % (total, expected, counts))


if client == "confluent":
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING

    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "read-all",
        "enable.auto.commit": False,
        "fetch.max.bytes": fetch_max,
        "max.partition.fetch.bytes": partition_max,
        # librdkafka wants fetch.max.bytes >= message.max.bytes (1000 at the least).
        "message.max.bytes": max(fetch_max, 1000),
        # librdkafka's own receive buffer must hold a whole answer.
        "receive.message.max.bytes": max(fetch_max, 1000) + 1_000_000,
    })
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    while sum(counts) < expected and time.time() < deadline:
        for m in c.consume(1000, 0.5):
            if m.error():
                print("error", m.error(), file=sys.stderr)
                finish()
            counts[m.partition()] += 1
    c.close()
elif client == "kafka-python":
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        fetch_max_bytes=fetch_max,
        max_partition_fetch_bytes=partition_max,
    )
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
    c.seek_to_beginning()
    while sum(counts) < expected and time.time() < deadline:
        for tp, msgs in c.poll(timeout_ms=500).items():
            counts[tp.partition] += len(msgs)
    c.close()
else:
    sys.exit("unknown client " + client)
finish()
