"""DeleteRecords through a real admin client, driven by `tests/admin_clients.rs`.

usage: delete_records.py CLIENT BOOTSTRAP TOPIC
CLIENT is `confluent` (AdminClient.delete_records, librdkafka) or `kafka-python`
(KafkaAdminClient.delete_records). Produces `v0`..`v19` to partition 0 of TOPIC, deletes the
records before offset 5, then tries to delete past the end. Prints `deleted LOW` (the low
watermark answered), `earliest OFFSET` and `first OFFSET VALUE` as a consumer from the
beginning sees them, and `past_end CODE`."""
import sys

client, bootstrap, topic = sys.argv[1:4]


def say(*parts):
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


def confluent():
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(20):
        p.produce(topic, ("v%d" % i).encode(), partition=0)
    p.flush(30)
    a = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0, 5)
    got = a.delete_records([tp], operation_timeout=20)[tp].result()
    say("deleted", got.low_watermark)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "delete-records",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    say("earliest", c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[0])
    c.assign([TopicPartition(topic, 0, -2)])  # OFFSET_BEGINNING
    m = None
    while m is None or m.error():
        m = c.poll(10)
    say("first", m.offset(), m.value().decode())
    c.close()
    past = TopicPartition(topic, 0, 100)
    try:
        a.delete_records([past], operation_timeout=20)[past].result()
        say("past_end", 0)
    except KafkaException as e:
        say("past_end", e.args[0].code())


def kafka_python():
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(20):
        p.send(topic, ("v%d" % i).encode(), partition=0)
    p.flush(30)
    p.close()
    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    tp = TopicPartition(topic, 0)
    got = a.delete_records({tp: 5}, timeout_ms=20000)
    say("deleted", got[tp]["low_watermark"])
    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                      consumer_timeout_ms=10000)
    say("earliest", c.beginning_offsets([tp])[tp])
    c.assign([tp])
    c.seek_to_beginning(tp)
    m = next(iter(c))
    say("first", m.offset, m.value.decode())
    c.close()
    try:
        a.delete_records({tp: 100}, timeout_ms=20000)
        say("past_end", 0)
    except KafkaError as e:
        say("past_end", e.errno)
    a.close()


{"confluent": confluent, "kafka-python": kafka_python}[client]()
