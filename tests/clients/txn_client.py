"""A confluent-kafka (librdkafka) transactional producer and read_committed reader, driven by
`tests/transaction_coordinator.rs`.

usage:
  txn_client.py produce BOOTSTRAP TXN_ID TOPICS PLAN
      PLAN: transactions separated by `;`, each `commit|abort:PREFIX:N` — N records valued
      `PREFIX-i`, record i to the i-th of the comma-separated TOPICS in turn, spread over
      each topic's partitions by key. Prints `committed PREFIX` or
      `aborted PREFIX` as each ends, `fenced` if the producer is fenced.
  txn_client.py fenced BOOTSTRAP TXN_ID TOPIC
      Two producers of one id: the first opens a transaction and writes `zombie-*`; the second
      initialises (fencing it) and commits `fresh-*`; the first's commit must fail fenced.
      Prints `first-fenced` and `second-committed`.
  txn_client.py hang BOOTSTRAP TXN_ID TOPIC TIMEOUT_MS
      Opens a transaction, writes `hung-*`, waits until it is written, and exits without
      ending it. Prints `written`.
  txn_client.py fill BOOTSTRAP TOPIC N
      Writes `v-0` … `v-(N-1)` (key i) with an idempotent producer. Prints `filled N`.
  txn_client.py copy BOOTSTRAP TXN_ID GROUP IN OUT
      Consume-transform-produce: reads IN at read_committed in group GROUP, writes each value
      to OUT (same key and partition, value `copy:<value>`) and the consumed offsets with
      send_offsets_to_transaction, one transaction per poll. Prints `progress K` (records
      copied in committed transactions) after each, and `done` once it owns every partition
      of IN and has read each to its end.
  txn_client.py read BOOTSTRAP TOPIC ISOLATION
      Reads every partition from the start to its end (the last stable offset for
      read_committed). Prints `rec PARTITION OFFSET VALUE` for each record, then `end`.

With TXN_CLIENT_DEBUG set (librdkafka debug contexts, e.g. `eos,cgrp`), the copier's producer
and consumer log those contexts to stderr: what an investigation of a stalled copier needs.
"""
import os
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition


def say(*parts):
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


def producer(bootstrap, txn_id, **extra):
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txn_id,
            "transaction.timeout.ms": 60000, "linger.ms": 5}
    conf.update(extra)
    conf.update(debugging())
    p = Producer(conf)
    p.init_transactions(60)
    return p


def debugging():
    contexts = os.environ.get("TXN_CLIENT_DEBUG")
    return {"debug": contexts} if contexts else {}


def write(p, topics, prefix, n):
    """Record i to the i-th of the comma-separated `topics` in turn."""
    topics = topics.split(",")
    for i in range(n):
        p.produce(topics[i % len(topics)], key=str(i).encode(), value=f"{prefix}-{i}".encode())
        p.poll(0)


def produce(bootstrap, txn_id, topics, plan):
    p = producer(bootstrap, txn_id)
    for step in plan.split(";"):
        how, prefix, n = step.split(":")
        p.begin_transaction()
        write(p, topics, prefix, int(n))
        if how == "commit":
            p.commit_transaction(60)
            say("committed", prefix)
        else:
            p.flush(60)
            p.abort_transaction(60)
            say("aborted", prefix)


def fenced(bootstrap, txn_id, topic):
    first = producer(bootstrap, txn_id)
    first.begin_transaction()
    write(first, topic, "zombie", 10)
    first.flush(60)
    second = producer(bootstrap, txn_id)
    try:
        first.commit_transaction(30)
        say("first-committed")
    except KafkaException as e:
        err = e.args[0]
        if err.fatal() or err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                          KafkaError.INVALID_PRODUCER_EPOCH):
            say("first-fenced", err.code())
        else:
            say("first-error", err)
    second.begin_transaction()
    write(second, topic, "fresh", 10)
    second.commit_transaction(60)
    say("second-committed")


def hang(bootstrap, txn_id, topic, timeout_ms):
    p = producer(bootstrap, txn_id, **{"transaction.timeout.ms": int(timeout_ms)})
    p.begin_transaction()
    write(p, topic, "hung", 10)
    p.flush(60)
    say("written")
    os._exit(0)


def fill(bootstrap, topic, n):
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(int(n)):
        p.produce(topic, key=str(i).encode(), value=f"v-{i}".encode())
        p.poll(0)
    left = p.flush(60)
    say("filled" if left == 0 else "unflushed", int(n) - left)


def copy(bootstrap, txn_id, group, source, sink):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False, "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                  "heartbeat.interval.ms": 1000, **debugging()})
    p = producer(bootstrap, txn_id)
    c.subscribe([source])
    partitions = len(c.list_topics(source, timeout=30).topics[source].partitions)
    copied = 0
    deadline = time.time() + 150
    while time.time() < deadline:
        msgs = c.consume(num_messages=50, timeout=1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            if caught_up(c, partitions):
                break
            continue
        p.begin_transaction()
        try:
            for m in msgs:
                p.produce(sink, key=m.key(), value=b"copy:" + m.value(), partition=m.partition())
                p.poll(0)
            positions = c.position(c.assignment())
            retrying(lambda: p.send_offsets_to_transaction(
                positions, c.consumer_group_metadata(), 60))
            retrying(lambda: p.commit_transaction(60))
        except KafkaException as e:
            # librdkafka's rule: an abortable error aborts the transaction, and the consumer
            # goes back to the committed offsets to read the same records again.
            if not e.args[0].txn_requires_abort():
                raise
            say("aborting", e.args[0])
            retrying(lambda: p.abort_transaction(60))
            rewind(c)
            continue
        copied += len(msgs)
        say("progress", copied)
    else:
        say("timeout")
        return
    say("done")
    c.close()


def retrying(call):
    """Calls again while librdkafka says the error is retriable (a coordinator moving)."""
    while True:
        try:
            return call()
        except KafkaException as e:
            if not e.args[0].retriable():
                raise
            time.sleep(0.2)


def rewind(c):
    """Seeks every assigned partition back to the group's committed offset."""
    for tp in c.committed(c.assignment(), timeout=30):
        if tp.offset < 0:
            tp.offset = -2  # OFFSET_BEGINNING
        c.seek(tp)


def caught_up(c, partitions):
    """Whether this member owns every partition and has read each to its end."""
    owned = c.assignment()
    if len(owned) < partitions:
        return False
    try:
        for tp in c.position(owned):
            _, high = c.get_watermark_offsets(tp, timeout=10)
            if tp.offset < high:
                return False
    except KafkaException:
        return False  # a broker going away: ask again on the next empty poll
    return True


def read(bootstrap, topic, isolation):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-check",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    meta = c.list_topics(topic, timeout=30)
    parts = sorted(meta.topics[topic].partitions)
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    left = set(parts)
    deadline = time.time() + 60
    while left and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                left.discard(m.partition())
                continue
            say("error", m.error())
            continue
        say("rec", m.partition(), m.offset(), m.value().decode())
    c.close()
    say("end" if not left else "stalled")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"produce": produce, "fenced": fenced, "hang": hang, "read": read, "fill": fill,
     "copy": copy}[cmd](*args)
