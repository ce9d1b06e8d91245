"""What an application does with a client library, every API it uses once: admin calls (create
a topic, list all topics and one, describe it, its configs and the cluster), an idempotent
producer, a consumer in a group that commits, group listing and description, deleting records
and the topic. Driven by `tests/client_requests.rs`, which records every request on the way.

usage: every_api.py CLIENT BOOTSTRAP PREFIX
CLIENT is `confluent` (librdkafka), `kafka-python` or `aiokafka`. Prints `ok N` (N records
consumed) or exits non-zero with the step that failed."""
import asyncio
import sys
import time

client, bootstrap, prefix = sys.argv[1:4]
topic = prefix + "-t"
group = prefix + "-g"
N = 20


def confluent():
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result()
    wait_for(lambda: topic in a.list_topics(timeout=5).topics)
    a.list_topics(topic=topic, timeout=5)
    r = ConfigResource(ResourceType.TOPIC, topic)
    a.describe_configs([r])[r].result()
    a.describe_cluster().result()
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for i in range(N):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    if p.flush(30) != 0:
        sys.exit("produce: not everything delivered")
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = 0
    deadline = time.time() + 60
    while got < N and time.time() < deadline:
        m = c.poll(1)
        if m is not None and not m.error():
            got += 1
    c.commit(asynchronous=False)
    c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    c.close()
    a.list_consumer_groups().result()
    a.describe_consumer_groups([group])[group].result()
    from confluent_kafka import ConsumerGroupTopicPartitions

    a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result()
    a.delete_records([TopicPartition(topic, 0, 1)])
    a.delete_topics([topic])[topic].result()
    return got


def kafka_python():
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    a.create_topics([NewTopic(topic, 2, 1)])
    wait_for(lambda: topic in a.list_topics())
    a.describe_topics([topic])
    a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    a.describe_cluster()
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    for f in [p.send(topic, key=b"k%d" % i, value=b"v%d" % i) for i in range(N)]:
        f.get(timeout=30)
    p.close()
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                      auto_offset_reset="earliest", enable_auto_commit=False)
    got = 0
    deadline = time.time() + 60
    while got < N and time.time() < deadline:
        got += sum(len(ms) for ms in c.poll(timeout_ms=1000).values())
    c.commit()
    c.committed(TopicPartition(topic, 0))
    c.close()
    a.list_groups()
    a.describe_groups([group])
    a.list_group_offsets(group)
    a.delete_records({TopicPartition(topic, 0): 1})
    a.delete_topics([topic])
    return got


def aiokafka():
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def run():
        a = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await a.start()
        await a.create_topics([NewTopic(topic, 2, 1)])
        for _ in range(100):
            if topic in await a.list_topics():
                break
            await asyncio.sleep(0.1)
        await a.describe_cluster()
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
        await p.start()
        for i in range(N):
            await p.send_and_wait(topic, key=b"k%d" % i, value=b"v%d" % i)
        await p.stop()
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        got = 0
        deadline = time.time() + 60
        while got < N and time.time() < deadline:
            batches = await c.getmany(timeout_ms=1000)
            got += sum(len(ms) for ms in batches.values())
        await c.commit()
        await c.stop()
        await a.list_consumer_groups()
        await a.describe_consumer_groups([group])
        await a.delete_topics([topic])
        await a.close()
        return got

    return asyncio.run(run())


def wait_for(cond):
    for _ in range(100):
        if cond():
            return
        time.sleep(0.1)
    sys.exit("the topic never appeared in the topic list")


got = {"confluent": confluent, "kafka-python": kafka_python, "aiokafka": aiokafka}[client]()
if got != N:
    sys.exit("consumed %d of %d" % (got, N))
print("ok %d" % got)
