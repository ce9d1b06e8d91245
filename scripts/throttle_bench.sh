#!/usr/bin/env bash
# A throttled reassignment at the issue's size (doc/configuration.md, "Replication
# throttles"): tests/replication_throttle.rs run with 200 MB moved at 1 MB/s over Kafka's 11
# one-second windows (THROTTLE_MB, THROTTLE_RATE in bytes/s, THROTTLE_WINDOWS to change them),
# an acks=all producer on another topic of the same leader throughout (THROTTLE_PRODUCE
# messages). Prints the move's time against the time the rate implies, the producer's
# throughput before, during and after the move, and how far the copy's rate strays from the throttle
# over every 1 s and 10 s window of the move. The test's whole output, the copy's progress
# included ("trace SECONDS BYTES"), is kept in target/throttle-bench.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cd "$here/.."
ensure_packages zookeeper
ensure_jdk
ensure_kafka_tools
ensure_rust_tools
export GREGOR_THROTTLE_MB=${THROTTLE_MB:-200}
export GREGOR_THROTTLE_RATE=${THROTTLE_RATE:-1000000}
export GREGOR_THROTTLE_WINDOWS=${THROTTLE_WINDOWS:-11}
export GREGOR_THROTTLE_PRODUCE=${THROTTLE_PRODUCE:-400000}
export GREGOR_THROTTLE_TRACE=1
log=target/throttle-bench.log
mkdir -p target
cargo test --quiet --test replication_throttle -- --nocapture >"$log" 2>&1 || { cat "$log"; exit 1; }
grep -E "^throttled move|^producer on live" "$log"
python3 - "$log" "$GREGOR_THROTTLE_RATE" <<'PY'
import sys
rate = float(sys.argv[2])
points = []
for line in open(sys.argv[1]):
    if line.startswith("trace "):
        _, t, b = line.split()
        points.append((float(t), int(b)))
# Only the copy itself: from the first byte to the last.
first = next(i for i, (_, b) in enumerate(points) if b > 0)
last = max(b for _, b in points)
end = next(i for i, (_, b) in enumerate(points) if b == last)
copy = points[first - 1 : end + 1] if first > 0 else points[: end + 1]
def windows(span):
    out = []
    for i, (t0, b0) in enumerate(copy):
        for t1, b1 in copy[i + 1 :]:
            if t1 - t0 >= span:
                out.append((b1 - b0) / (t1 - t0) / rate)
                break
    return out
for span in (1.0, 10.0):
    w = windows(span)
    if w:
        w.sort()
        print(f"{span:.0f} s windows: {len(w)}, copy rate / throttle min {w[0]:.2f} median {w[len(w)//2]:.2f} max {w[-1]:.2f}")
PY
