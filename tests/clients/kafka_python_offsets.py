"""kafka-python with a group_id and assign(): commits offsets, and a second consumer of the same
group starts from them. Exits non-zero with a reason otherwise."""
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

bootstrap, topic = sys.argv[1], sys.argv[2]
p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
for i in range(10):
    p.send(topic, value=b"m%d" % i, partition=0)
p.flush()
p.close()
tp = TopicPartition(topic, 0)
c = KafkaConsumer(bootstrap_servers=bootstrap, group_id="py-group", enable_auto_commit=False, auto_offset_reset="earliest", consumer_timeout_ms=3000)
c.assign([tp])
first = [next(c).value for _ in range(4)]
c.commit({tp: OffsetAndMetadata(4, "", -1)})
c.close()
c = KafkaConsumer(bootstrap_servers=bootstrap, group_id="py-group", enable_auto_commit=False, auto_offset_reset="earliest", consumer_timeout_ms=3000)
c.assign([tp])
committed = c.committed(tp)
rest = [m.value for m in c]
if first != [b"m0", b"m1", b"m2", b"m3"] or committed != 4 or rest != [b"m%d" % i for i in range(4, 10)]:
    sys.exit("first %r committed %r rest %r" % (first, committed, rest))
print("ok")
