"""A consumer reading one partition by assign() from offset 0 while the test changes its
leader: prints each value as it arrives (one line, flushed), and exits 0 once it has
`count`, or non-zero with the reason. Offset resets are turned off, so a client that cannot
validate its position after the leader change (KIP-320: OffsetForLeaderEpoch with the leader
epoch from Metadata) fails instead of silently starting over.

    follow_leader_change.py <client> <bootstrap> <topic> <count>

client: confluent (librdkafka) or kafka-python."""
import sys
import time

client, bootstrap, topic, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
deadline = time.time() + 120
got = 0


def show(value):
    global got
    print(value.decode(), flush=True)
    got += 1


if client == "confluent":
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "follow-" + topic,
                  "enable.auto.commit": False, "auto.offset.reset": "error",
                  "topic.metadata.refresh.interval.ms": 1000, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, 0, 0)])
    while got < count and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().fatal() or m.error().code() == -147:  # _AUTO_OFFSET_RESET
                sys.exit("consumer error: %s" % m.error())
            continue
        show(m.value())
    c.close()
elif client == "kafka-python":
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                      auto_offset_reset="none", fetch_max_wait_ms=100, metadata_max_age_ms=1000)
    c.assign([tp])
    c.seek(tp, 0)
    while got < count and time.time() < deadline:
        for records in c.poll(timeout_ms=500).values():
            for r in records:
                show(r.value)
    c.close()
else:
    sys.exit("unknown client " + client)
if got < count:
    sys.exit("got %d of %d values before the deadline" % (got, count))
