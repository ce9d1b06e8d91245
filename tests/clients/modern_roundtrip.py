"""Format v2 through a real client: produces records with a key, two headers and an explicit
timestamp, once per codec given, to partition 0 of the topic; reads them all back with an
assign()-based consumer; checks that every record came back exactly once with its key,
headers and timestamp, and that offsets_for_times finds the first record at or after a
time. Prints "ok <count>", or exits non-zero with the reason.

    modern_roundtrip.py <client> <bootstrap> <topic> <codec>[,<codec>...]

client: confluent (librdkafka), kafka-python (its defaults: idempotent, acks=all) or
aiokafka."""
import asyncio
import sys

client, bootstrap, topic = sys.argv[1], sys.argv[2], sys.argv[3]
codecs = [None if c == "none" else c for c in sys.argv[4].split(",")]
T0 = 1_700_000_000_000
N = 20


def records():
    for ci, codec in enumerate(codecs):
        for i in range(N):
            n = ci * N + i
            yield codec, b"k%d" % n, b"%s-%d" % (str(codec).encode(), n), T0 + n, [
                ("trace", b"t%d" % n),
                ("empty", b""),
            ]


def check(got, at_time):
    want = [(k, v, ts, hs) for _, k, v, ts, hs in records()]
    got = sorted(got, key=lambda r: r[2])
    if got != want:
        missing = [w for w in want if w not in got][:3]
        sys.exit("sent %d, got %d; first missing %s; first got %s" % (len(want), len(got), missing, got[:1]))
    # The record at T0 + 7 is the 8th sent, at offset 7.
    if at_time != 7:
        sys.exit("offsets_for_times(T0 + 7) gave %s, want 7" % at_time)
    print("ok %d" % len(got))


def confluent():
    from confluent_kafka import Consumer, Producer, TopicPartition

    for codec in codecs:
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": codec or "none"})
        for c, k, v, ts, hs in records():
            if c == codec:
                p.produce(topic, key=k, value=v, partition=0, timestamp=ts, headers=hs)
        if p.flush(30) != 0:
            sys.exit("librdkafka could not deliver everything")
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    while len(got) < N * len(codecs):
        m = c.poll(10)
        if m is None:
            break
        if m.error():
            sys.exit("consume error %s" % m.error())
        hs = [(h, v or b"") for h, v in (m.headers() or [])]
        got.append((m.key(), m.value(), m.timestamp()[1], hs))
    at = c.offsets_for_times([TopicPartition(topic, 0, T0 + 7)], 10)[0].offset
    c.close()
    check(got, at)


def kafka_python():
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    for codec in codecs:
        p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, request_timeout_ms=15000)
        futures = [
            p.send(topic, key=k, value=v, partition=0, timestamp_ms=ts, headers=hs)
            for c, k, v, ts, hs in records()
            if c == codec
        ]
        p.flush()
        for f in futures:
            f.get(timeout=15)
        p.close()
    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=5000, enable_auto_commit=False)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = [(m.key, m.value, m.timestamp, list(m.headers)) for m in c]
    at = c.offsets_for_times({tp: T0 + 7})[tp].offset
    check(got, at)


async def aiokafka_run():
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    for codec in codecs:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=codec)
        await p.start()
        try:
            for c, k, v, ts, hs in records():
                if c == codec:
                    await p.send_and_wait(topic, v, key=k, partition=0, timestamp_ms=ts, headers=hs)
        finally:
            await p.stop()
    tp = TopicPartition(topic, 0)
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await c.start()
    try:
        c.assign([tp])
        await c.seek_to_beginning(tp)
        got = []
        while len(got) < N * len(codecs):
            batch = await c.getmany(tp, timeout_ms=5000)
            if not batch:
                break
            got += [(m.key, m.value, m.timestamp, list(m.headers)) for m in batch[tp]]
        at = (await c.offsets_for_times({tp: T0 + 7}))[tp].offset
    finally:
        await c.stop()
    check(got, at)


if client == "confluent":
    confluent()
elif client == "kafka-python":
    kafka_python()
elif client == "aiokafka":
    asyncio.run(aiokafka_run())
else:
    sys.exit("unknown client %s" % client)
