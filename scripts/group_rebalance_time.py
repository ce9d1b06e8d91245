"""Rebalance time of a Kafka-protocol group of librdkafka (confluent-kafka) members on a
cluster run by scripts/cluster.sh, the counterpart of examples/rebalance_time.rs for gregor's
own consumer.

  target/python-venv/bin/python scripts/group_rebalance_time.py [MEMBERS [PARTITIONS [ROUNDS]]]   (10 100 6)

Creates topic `grebalance-PARTITIONS` (replication factor 2) if missing, keeps a producer
writing to every partition, starts MEMBERS members (heartbeat.interval.ms=100: members learn
of a rebalance from their next heartbeat), then alternately adds and removes (close: LeaveGroup)
one more. For each change it prints the time until the members' assignments cover every
partition once, and until every member has received a message again. The brokers should run
with group.initial.rebalance.delay.ms=0 (see doc/performance.md).
"""
import statistics
import sys
import threading
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

members_n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
parts_n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 6
bootstrap = "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"
topic = "grebalance-%d" % parts_n


class Member:
    def __init__(self, i):
        self.c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": topic + "-group",
            "client.id": "member-%d" % i,
            "heartbeat.interval.ms": 100,
            "session.timeout.ms": 10000,
            "auto.offset.reset": "latest",
            "enable.auto.commit": False,
        })
        self.c.subscribe([topic])
        self.owned = frozenset()
        self.last_msg = 0.0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            m = self.c.poll(0.01)
            self.owned = frozenset(p.partition for p in self.c.assignment())
            if m is not None and not m.error():
                self.last_msg = time.monotonic()
        self.c.close()

    def close(self):
        self.stop.set()
        self.t.join()


def covered(ms):
    seen = []
    for m in ms:
        seen.extend(m.owned)
    return len(seen) == parts_n and set(seen) == set(range(parts_n))


def wait(what, cond, limit=60):
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() > deadline:
            sys.exit("timed out waiting for " + what)
        time.sleep(0.002)
    return time.monotonic()


admin = AdminClient({"bootstrap.servers": bootstrap})
deadline = time.monotonic() + 30
while topic not in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
    time.sleep(0.5)
if topic not in admin.list_topics(timeout=10).topics:
    sys.exit("create the topic first: gregor topics --zookeeper 127.0.0.1:2181/gregor --create "
             "--topic %s --partitions %d --replication-factor 2" % (topic, parts_n))
producing = threading.Event()


def produce():
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    while not producing.is_set():
        for part in range(parts_n):
            p.produce(topic, b"x", partition=part)
        p.poll(0)
        time.sleep(0.005)
    p.flush()


threading.Thread(target=produce, daemon=True).start()
members = [Member(i) for i in range(members_n)]
wait("the first assignment", lambda: covered(members) and all(m.owned for m in members))
results = {"join": [], "leave": []}
for r in range(rounds):
    change = "join" if r % 2 == 0 else "leave"
    t0 = time.monotonic()
    if change == "join":
        members.append(Member(members_n + r))
    else:
        members.pop().close()
    # Disjoint cover by exactly the current members, each owning some: the new assignment.
    assigned = wait("the new assignment", lambda: covered(members) and all(m.owned for m in members))
    fetching = wait("every member to fetch again", lambda: all(m.last_msg > assigned for m in members))
    results[change].append(((assigned - t0) * 1000, (fetching - t0) * 1000))
    print("%-5s assigned in %6.0f ms, every member fetching in %6.0f ms" % (change, *results[change][-1]))
    time.sleep(1)
for change, rs in results.items():
    if rs:
        print("%s: median assigned %.0f ms, fetching %.0f ms over %d rounds" % (
            change, statistics.median(a for a, _ in rs), statistics.median(f for _, f in rs), len(rs)))
producing.set()
for m in members:
    m.close()
