"""A transactional producer for the chaos run (tests/chaos/transactions.rs): confluent-kafka
(librdkafka) writing transaction after transaction of 5 records (`tK-0` … `tK-4`) until `stop`
arrives on stdin; every fifth transaction is aborted on purpose. Follows librdkafka's rules:
a retriable error retries the call, an abortable one aborts the transaction, a fatal one
(fenced, or the state lost) makes a new producer.

usage: txn_chaos.py BOOTSTRAP TOPIC
Prints one line per transaction: `committed K`, `aborted K`, or `unknown K` when its end is
not known (a fatal error mid-way: it must then be all there or not at all); `done` at the end.
"""
import sys
import threading
import time

from confluent_kafka import KafkaException, Producer

from txn_client import retrying

bootstrap, topic = sys.argv[1:3]
stop = threading.Event()


def say(*parts):
    sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
    sys.stdout.flush()


def watch_stdin():
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    stop.set()


def make():
    while True:
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "chaos-txn",
                      "transaction.timeout.ms": 30000, "linger.ms": 5,
                      "message.timeout.ms": 30000})
        try:
            p.init_transactions(30)
            return p
        except KafkaException as e:
            say("note init", e.args[0])
            time.sleep(0.5)


threading.Thread(target=watch_stdin, daemon=True).start()
p = make()
k = 0
while not stop.is_set():
    k += 1
    on_purpose = k % 5 == 0
    try:
        p.begin_transaction()
        for i in range(5):
            p.produce(topic, key=f"{k}-{i}".encode(), value=f"t{k}-{i}".encode())
        p.poll(0)
        if on_purpose:
            retrying(lambda: p.abort_transaction(60))
            say("aborted", k)
        else:
            retrying(lambda: p.commit_transaction(60))
            say("committed", k)
    except KafkaException as e:
        err = e.args[0]
        if err.txn_requires_abort() and not err.fatal():
            try:
                retrying(lambda: p.abort_transaction(60))
                say("aborted", k)
                continue
            except KafkaException as e2:
                err = e2.args[0]
        say("unknown", k, err)
        p = make()
    time.sleep(0.05)
say("done")
