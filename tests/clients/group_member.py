"""One member of a Kafka consumer group, through a real client, driven by a Rust test.

usage: group_member.py CLIENT BOOTSTRAP GROUP TOPIC [key=value ...]
CLIENT is `confluent` (librdkafka, confluent-kafka) or `kafka-python`.
Options: session_ms, heartbeat_ms, instance_id, commit (1: commit synchronously after every
message), autocommit_ms (confluent only: librdkafka commits what was consumed at this interval
and on close), refresh_ms (librdkafka's topic.metadata.refresh.interval.ms), assignor (librdkafka's
partition.assignment.strategy, e.g. cooperative-sticky), stats_ms (confluent only: librdkafka's
statistics every N ms, printed as `fetch` lines).

Prints one line per event, flushed: `assigned T:P,...` from every rebalance callback (the
partitions it hands over: all of them for eager assignors, the added ones for cooperative),
`owns T:P,...` whenever the whole assignment changes, `msg P OFFSET VALUE` per message,
`committed P OFFSET`, `closed`; with stats_ms, `fetch P STATE leader=L broker=B next=N hi=H`
whenever one of them changes for an assigned partition (librdkafka's own view of its fetcher:
the state, the leader it knows, the broker it fetches from, its next offset and the high
watermark last answered), and `error TEXT` for each error librdkafka reports. A line `leave`
on stdin closes the consumer cleanly (it sends LeaveGroup) and exits; EOF on stdin does too.
"""
import faulthandler
import logging
import os
import signal
import sys
import threading

client, bootstrap, group, topic = sys.argv[1:5]
opts = dict(a.split("=", 1) for a in sys.argv[5:])
session_ms = int(opts.get("session_ms", "6000"))
heartbeat_ms = int(opts.get("heartbeat_ms", "500"))
instance_id = opts.get("instance_id")
commit = opts.get("commit") == "1"
stop = threading.Event()
# GROUP_MEMBER_LOG=PREFIX writes the client's debug log to PREFIX.PID, to see what it did.
if os.environ.get("GROUP_MEMBER_LOG"):
    logging.basicConfig(filename="%s.%d" % (os.environ["GROUP_MEMBER_LOG"], os.getpid()), level=logging.DEBUG,
                        format="%(asctime)s %(threadName)s %(name)s %(message)s")
# SIGUSR1 prints every thread's stack, to see where a member that stopped answering is stuck.
faulthandler.register(signal.SIGUSR1, all_threads=True)

def say(*parts):
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


owned = [None]
owned_partitions = set()


def report_owned(parts):
    now = ",".join(sorted("%s:%d" % (p.topic, p.partition) for p in parts))
    if now != owned[0]:
        owned[0] = now
        owned_partitions.clear()
        owned_partitions.update(p.partition for p in parts)
        say("owns", now)


fetchers = {}


def report_fetchers(stats_json):
    """librdkafka's statistics, reduced to what shows a stalled fetcher."""
    import json

    for t in json.loads(stats_json).get("topics", {}).values():
        for p in t.get("partitions", {}).values():
            if p["partition"] not in owned_partitions:
                continue
            now = "%s leader=%d broker=%d next=%d hi=%d" % (
                p["fetch_state"], p["leader"], p["broker"], p["next_offset"], p["hi_offset"])
            if fetchers.get(p["partition"]) != now:
                fetchers[p["partition"]] = now
                say("fetch", p["partition"], now)


def watch_stdin():
    for line in sys.stdin:
        if line.strip() == "leave":
            break
    stop.set()


threading.Thread(target=watch_stdin, daemon=True).start()


def run_confluent():
    from confluent_kafka import Consumer, TopicPartition

    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": heartbeat_ms,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": "autocommit_ms" in opts,
        "auto.commit.interval.ms": int(opts.get("autocommit_ms", "5000")),
        "topic.metadata.refresh.interval.ms": int(opts.get("refresh_ms", "300000")),
    }
    if instance_id:
        conf["group.instance.id"] = instance_id
    if "assignor" in opts:
        conf["partition.assignment.strategy"] = opts["assignor"]
    if "stats_ms" in opts:
        conf["statistics.interval.ms"] = int(opts["stats_ms"])
        conf["stats_cb"] = report_fetchers
        conf["error_cb"] = lambda e: say("error", str(e).replace("\n", " "))
    c = Consumer(conf)

    def on_assign(consumer, parts):
        say("assigned", ",".join("%s:%d" % (p.topic, p.partition) for p in parts))

    c.subscribe([topic], on_assign=on_assign)
    while not stop.is_set():
        m = c.poll(0.1)
        report_owned(c.assignment())
        if m is None or m.error():
            continue
        say("msg", m.partition(), m.offset(), m.value().decode())
        if commit:
            c.commit(offsets=[TopicPartition(m.topic(), m.partition(), m.offset() + 1)], asynchronous=False)
            say("committed", m.partition(), m.offset() + 1)
    c.close()


def run_kafka_python():
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=heartbeat_ms,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            pass

        def on_partitions_assigned(self, assigned):
            say("assigned", ",".join("%s:%d" % (p.topic, p.partition) for p in sorted(assigned)))

    c.subscribe([topic], listener=Listener())
    while not stop.is_set():
        # kafka-python 3.0.12 loses a rebalance when poll() times out while its JoinGroup or
        # SyncGroup is in flight and the rejoin was asked for by a metadata change (its
        # need_rejoin() compares snapshots but does not count a pending join, and the leader's
        # assignment refreshes the snapshot): the member then stays Stable with no partitions
        # and never fetches. Seen in its own debug log, SyncGroup answered with both
        # partitions; with poll(100) on a loaded 2-core machine in 2 of 2 loops, with
        # poll(1000) in none of 25. A one-member join here takes milliseconds, so a one-second
        # poll keeps the client out of that path.
        batch = c.poll(timeout_ms=1000)
        report_owned(c.assignment())
        for tp, msgs in batch.items():
            for m in msgs:
                say("msg", m.partition, m.offset, m.value.decode())
                if commit:
                    c.commit({tp: OffsetAndMetadata(m.offset + 1, "", -1)})
                    say("committed", m.partition, m.offset + 1)
    c.close()


{"confluent": run_confluent, "kafka-python": run_kafka_python}[client]()
say("closed")
