"""Reads a topic's partition 0 from the start through confluent-kafka (librdkafka) or
kafka-python at an isolation level, driven by `tests/transactions.rs`.

usage: txn_reader.py CLIENT BOOTSTRAP TOPIC ISOLATION
  CLIENT     confluent | kafka-python
  ISOLATION  read_committed | read_uncommitted
Prints `rec OFFSET VALUE` for each record handed to the application, then `end` once the
consumer reached the end of what it may read (librdkafka: the partition EOF, which for
read_committed is the last stable offset; kafka-python: end_offsets at that isolation).
"""
import sys
import time

client, bootstrap, topic, isolation = sys.argv[1:5]


def say(*parts):
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


def confluent():
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-reader",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0)])
    deadline = time.time() + 30
    while time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                say("end")
                c.close()
                return
            say("error", m.error())
            continue
        say("rec", m.offset(), m.value().decode())
    say("stalled")


def kafka_python():
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                      isolation_level=isolation, auto_offset_reset="earliest")
    c.assign([tp])
    c.seek(tp, 0)
    end = c.end_offsets([tp])[tp]
    deadline = time.time() + 30
    while time.time() < deadline:
        if c.position(tp) >= end:
            say("end")
            c.close()
            return
        for recs in c.poll(timeout_ms=500).values():
            for r in recs:
                say("rec", r.offset, r.value.decode())
    say("stalled")


confluent() if client == "confluent" else kafka_python()
