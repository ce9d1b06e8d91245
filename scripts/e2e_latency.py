"""End-to-end latency through librdkafka (confluent-kafka), the shape of the acks=all latency
report: one process produces 100-byte messages at a fixed rate to partition 0 (linger.ms=0,
librdkafka's default in-flight window), another reads the partition by assign(); latency is
receive time minus the send time carried in the value.

  target/python-venv/bin/python scripts/e2e_latency.py c BOOTSTRAP TOPIC RATE SECONDS ACKS &    # the consumer, first
  target/python-venv/bin/python scripts/e2e_latency.py p BOOTSTRAP TOPIC RATE SECONDS ACKS [MAX_IN_FLIGHT [spin]]

The consumer prints `rate R acks A n N p50 .. p99 .. p99.9 .. max .. ms`; it takes each
message as soon as librdkafka has it (no batching wait of its own). The producer sends
what is due and sleeps until the next message is (`spin`: busy-waits instead, as it used to,
which on a 2-core machine takes a core from the brokers). Latency counts from the moment a
message is produced.
"""
import sys, time, struct
from confluent_kafka import Producer, Consumer, TopicPartition
mode, bootstrap, topic, rate, secs, acks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
n = int(rate * secs)
if mode == "c":
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "lat", "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, 0, -1)])
    lat = []
    end = time.time() + secs + 10
    while len(lat) < n and time.time() < end:
        # What has arrived, at once: consume() with a timeout waits out the whole timeout
        # unless its batch fills, which would add up to that timeout to every latency. With
        # nothing there, poll() waits for the next message and returns as it arrives.
        got = c.consume(10000, 0) or [c.poll(0.1)]
        for m in got:
            if m is None or m.error(): continue
            t = struct.unpack(">d", m.value()[:8])[0]
            lat.append(time.time() - t)
    lat.sort()
    q = lambda x: lat[min(len(lat)-1, int(x*len(lat)))]*1000
    print("rate %d acks %s n %d p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms" % (rate, acks, len(lat), q(.5), q(.99), q(.999), lat[-1]*1000))
else:
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 0, "max.in.flight": int(sys.argv[7]) if len(sys.argv) > 7 else 1000000})
    start = time.time(); pad = b"x" * 92; sent = 0
    spin = len(sys.argv) > 8 and sys.argv[8] == "spin"
    while sent < n:
        # What is due by now goes out at once (a client with linger.ms=0 sends as it
        # produces); between ticks the producer sleeps, leaving the cores to the brokers,
        # unless `spin` asks for the old busy wait.
        due = min(n, int((time.time() - start) * rate) + 1)
        while sent < due:
            p.produce(topic, struct.pack(">d", time.time()) + pad, partition=0)
            sent += 1
        p.poll(0)
        if spin:
            while time.time() < start + sent / rate: pass
        else:
            time.sleep(max(0.0, start + sent / rate - time.time()))
    p.flush()
