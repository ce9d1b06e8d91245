"""An idempotent librdkafka producer (confluent-kafka, enable.idempotence=true, acks=all),
driven by `tests/idempotent_clients.rs` while it kills and pauses leaders.

Also the idempotent producer of the chaos run (`tests/chaos/workload.rs`).

usage: idempotent_producer.py BOOTSTRAP TOPIC [PREFIX PARTITIONS PAUSE_MS]
Sends `m0`, `m1`, ... (PREFIX instead of `m` when given) to partition 0 (to any of the
topic's partitions when PARTITIONS is `any`), about one every millisecond (every PAUSE_MS
when given), until a line `stop` (or EOF) arrives on stdin; then waits for every
outstanding message. Prints, flushed, `ack I OFFSET PARTITION` for each message the broker
acknowledged, `fail I ERROR` for each that failed, `fatal ERROR` if the producer hit a fatal
idempotence error or librdkafka refused a message outright (then it stops sending), and
`done SENT` at the end."""
import os
import sys
import threading
import time

from confluent_kafka import KafkaException, Producer

bootstrap, topic = sys.argv[1:3]
prefix = sys.argv[3] if len(sys.argv) > 3 else "m"
partition = {} if len(sys.argv) > 4 and sys.argv[4] == "any" else {"partition": 0}
pause = float(sys.argv[5]) / 1000 if len(sys.argv) > 5 else 0.001
stop = threading.Event()
lock = threading.Lock()


def say(*parts):
    with lock:
        sys.stdout.write(" ".join(str(p) for p in parts) + "\n")
        sys.stdout.flush()


def watch_stdin():
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    stop.set()


threading.Thread(target=watch_stdin, daemon=True).start()


def on_error(err):
    if err.fatal():
        say("fatal", err.str().replace(" ", "_"))
        stop.set()


p = Producer({
    "bootstrap.servers": bootstrap,
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 1,
    "message.timeout.ms": 120000,
    "retry.backoff.ms": 50,
    "request.timeout.ms": 5000,
    # A paused leader keeps its connections open: give up on its in-flight requests after
    # 5 s instead of the 60 s default, as a user facing such a broker would.
    "socket.timeout.ms": 5000,
    "error_cb": on_error,
    # GREGOR_RDKAFKA_DEBUG=eos,msg,protocol (say) puts librdkafka's own account on stderr.
    **({"debug": os.environ["GREGOR_RDKAFKA_DEBUG"]} if os.environ.get("GREGOR_RDKAFKA_DEBUG") else {}),
})


def delivered(i):
    def cb(err, msg):
        if err is None:
            say("ack", i, msg.offset(), msg.partition())
        else:
            say("fail", i, err.str().replace(" ", "_"))
    return cb


sent = 0
while not stop.is_set():
    try:
        p.produce(topic, ("%s%d" % (prefix, sent)).encode(), on_delivery=delivered(sent),
                  **partition)
        sent += 1
    except BufferError:
        pass
    except KafkaException as e:
        # librdkafka refuses at once a message for a topic the cluster told it does not exist
        # (a broker answering "unknown topic" for a live one): a finding, not a retry.
        say("fatal", "produce_refused:" + e.args[0].str().replace(" ", "_"))
        break
    p.poll(pause)
left = p.flush(150)
say("done", sent, left)
