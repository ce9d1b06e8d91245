"""What transactions cost, through librdkafka (confluent-kafka), driven by scripts/txn_bench.sh.

  txn_bench.py throughput BOOTSTRAP TOPIC N SIZE
      N 100-byte messages; SIZE 0: an idempotent producer (no transactions); SIZE k: a
      transactional producer committing every k messages. Prints `size K msgs N secs S rate R`.
  txn_bench.py latency-consumer BOOTSTRAP TOPIC RATE SECONDS
      A read_committed reader of every partition; prints `n N p50 .. p99 .. max .. ms` of
      receive time minus the send time carried in each value.
  txn_bench.py latency-producer BOOTSTRAP TOPIC RATE SECONDS TXN_MS
      Produces at RATE msg/s in transactions committed every TXN_MS ms.
  txn_bench.py leave-open BOOTSTRAP TOPIC FIRST COUNT TIMEOUT_MS
      COUNT transactional producers (ids open-FIRST ...) each begin a transaction, write one
      record and are abandoned (the process exits without ending them). Prints `open COUNT`.
"""
import os
import struct
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def throughput(bootstrap, topic, n, size):
    n, size = int(n), int(size)
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
    if size:
        conf["transactional.id"] = f"bench-{size}-{time.time()}"
    p = Producer(conf)
    value = b"x" * 100
    # Connections and metadata first, outside the timing (a transaction of its own for a
    # transactional producer).
    if size:
        p.init_transactions(60)
        p.begin_transaction()
        p.produce(topic, value)
        p.commit_transaction(60)
    else:
        p.produce(topic, value)
        p.flush(60)
    start = time.time()
    if size:
        sent = 0
        while sent < n:
            p.begin_transaction()
            for _ in range(min(size, n - sent)):
                while True:
                    try:
                        p.produce(topic, value)
                        break
                    except BufferError:
                        p.poll(0.01)
                sent += 1
            p.commit_transaction(60)
    else:
        for _ in range(n):
            while True:
                try:
                    p.produce(topic, value)
                    break
                except BufferError:
                    p.poll(0.01)
        p.flush(60)
    secs = time.time() - start
    print("size %d msgs %d secs %.2f rate %.0f" % (size, n, secs, n / secs))


def latency_consumer(bootstrap, topic, rate, secs):
    n = int(int(rate) * float(secs))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-lat", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "fetch.wait.max.ms": 100})
    parts = c.list_topics(topic, timeout=30).topics[topic].partitions
    c.assign([TopicPartition(topic, p, -1) for p in parts])
    lat = []
    end = time.time() + float(secs) + 20
    while len(lat) < n and time.time() < end:
        for m in c.consume(10000, 0) or [c.poll(0.1)]:
            if m is None or m.error():
                continue
            lat.append(time.time() - struct.unpack(">d", m.value()[:8])[0])
    lat.sort()
    q = lambda x: lat[min(len(lat) - 1, int(x * len(lat)))] * 1000
    print("n %d p50 %.1f p99 %.1f max %.1f ms" % (len(lat), q(.5), q(.99), lat[-1] * 1000))


def latency_producer(bootstrap, topic, rate, secs, txn_ms):
    rate, n, txn = int(rate), int(int(rate) * float(secs)), float(txn_ms) / 1000
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0,
                  "transactional.id": f"lat-{time.time()}"})
    p.init_transactions(60)
    pad = b"x" * 92
    start = time.time()
    sent = 0
    while sent < n:
        p.begin_transaction()
        until = time.time() + txn
        while time.time() < until and sent < n:
            due = min(n, int((time.time() - start) * rate) + 1)
            while sent < due:
                p.produce(topic, struct.pack(">d", time.time()) + pad)
                sent += 1
            p.poll(0)
            time.sleep(0.001)
        p.commit_transaction(60)


def leave_open(bootstrap, topic, first, count, timeout_ms):
    kept = []
    for i in range(int(first), int(first) + int(count)):
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"open-{i}",
                      "transaction.timeout.ms": int(timeout_ms), "linger.ms": 0})
        p.init_transactions(60)
        p.begin_transaction()
        p.produce(topic, b"open")
        p.flush(60)
        kept.append(p)
    print("open", len(kept))
    sys.stdout.flush()
    os._exit(0)


cmd, args = sys.argv[1], sys.argv[2:]
{"throughput": throughput, "latency-consumer": latency_consumer,
 "latency-producer": latency_producer, "leave-open": leave_open}[cmd](*args)
