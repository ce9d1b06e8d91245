"""Produces with kafka-python's defaults (uncompressed, gzip, snappy; acks=all) to the topic
given, then reads everything back with an assign()-based consumer, and checks that every
message came back exactly once. Exits non-zero with a reason otherwise."""
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

bootstrap, topic, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3])
sent = set()
for comp in [None, "gzip", "snappy"]:
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type=comp, request_timeout_ms=15000)
    futures = []
    for i in range(50):
        value = ("%s-%d" % (comp, i)).encode()
        futures.append(p.send(topic, key=b"k%d" % i, value=value))
        sent.add(value)
    p.flush()
    for f in futures:
        f.get(timeout=15)
    p.close()
c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=5000, enable_auto_commit=False)
c.assign([TopicPartition(topic, p) for p in range(partitions)])
c.seek_to_beginning()
got = [m.value for m in c]
if sorted(got) != sorted(sent):
    sys.exit("sent %d, got %d; missing %s" % (len(sent), len(got), sorted(sent - set(got))[:5]))
print("ok %d" % len(got))
