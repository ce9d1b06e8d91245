"""A confluent-kafka (librdkafka) client run flat out for a while, to see a quota hold it.

usage: quota_client.py MODE BOOTSTRAP TOPIC CLIENT_ID SECONDS
MODE is `produce` (1 KiB values, as fast as librdkafka takes them), `consume` (every
partition of TOPIC from the start, no group), `metadata` (Metadata requests one after the
other) or `create-topics` (one CreateTopics request for 10 topics of 4 partitions, named after
TOPIC).

Prints one JSON line: bytes (acknowledged or consumed) or requests, in total and per whole
second since the first, and from librdkafka's statistics the largest broker throttle time
(ms) and how many times its connections to the brokers were lost.
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

mode, bootstrap, topic, client_id, seconds = sys.argv[1:6]
seconds = float(seconds)
stats = {"throttle_max": 0, "disconnects": 0}


def on_stats(text):
    s = json.loads(text)
    brokers = [b for b in s.get("brokers", {}).values() if b.get("nodeid", -1) >= 0]
    for b in brokers:
        stats["throttle_max"] = max(stats["throttle_max"], b.get("throttle", {}).get("max", 0))
    stats["disconnects"] = max(stats["disconnects"], sum(b.get("disconnects", 0) for b in brokers))


conf = {
    "bootstrap.servers": bootstrap,
    "client.id": client_id,
    "statistics.interval.ms": 200,
    "stats_cb": on_stats,
}
per_second = {}
start = [None]


def count(n):
    now = time.monotonic()
    if start[0] is None:
        start[0] = now
    sec = int(now - start[0])
    if now - start[0] < seconds:
        per_second[sec] = per_second.get(sec, 0) + n


def report():
    total = sum(per_second.values())
    secs = [per_second.get(i, 0) for i in range(int(seconds))]
    print(json.dumps({"total": total, "per_second": secs, **stats}))


if mode == "produce":
    # Small batches: each request is a small part of a quota window, so what is held is the
    # broker's doing, not the granularity of 1 MB requests against a 256 KiB/s bound.
    p = Producer({**conf, "linger.ms": 5, "acks": 1, "batch.size": 16384})
    value = b"x" * 1024

    def delivered(err, msg):
        if err is None:
            count(len(msg.value()))

    t0 = time.monotonic()
    while start[0] is None or time.monotonic() - start[0] < seconds:
        if time.monotonic() - t0 > seconds + 30:
            break
        try:
            p.produce(topic, value, callback=delivered)
        except BufferError:
            p.poll(0.01)
            continue
        p.poll(0)
    p.poll(0.5)
    p.purge()
    p.flush(5)
elif mode == "consume":
    c = Consumer({**conf, "group.id": "quota-" + client_id, "enable.auto.commit": False,
                  "max.partition.fetch.bytes": 65536})
    meta = c.list_topics(topic, timeout=10)
    parts = [TopicPartition(topic, p, 0) for p in meta.topics[topic].partitions]
    c.assign(parts)
    t0 = time.monotonic()
    # Timed from the first message, or from the start when none comes (an empty topic).
    while time.monotonic() - (start[0] or t0) < seconds:
        for m in c.consume(500, 0.1):
            if not m.error():
                count(len(m.value()))
    c.close()
elif mode == "metadata":
    p = Producer(conf)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        p.list_topics(timeout=10)
        count(1)
    p.poll(0.5)
report()
