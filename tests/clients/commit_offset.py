"""Commits one offset for a group through confluent-kafka (librdkafka), outside group
management, reads it back and prints it.

usage: commit_offset.py BOOTSTRAP GROUP TOPIC PARTITION OFFSET
"""
import sys

from confluent_kafka import Consumer, TopicPartition

bootstrap, group, topic, partition, offset = sys.argv[1:6]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
c.commit(offsets=[TopicPartition(topic, int(partition), int(offset))], asynchronous=False)
got = c.committed([TopicPartition(topic, int(partition))], timeout=30)
print(got[0].offset)
c.close()
