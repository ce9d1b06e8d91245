//! Compressed produce: kcat's gzip and snappy sets are stored with the offsets this broker
//! assigns, replicated, and read back by kcat and by gregor's own decoder; a corrupt compressed
//! payload is refused with nothing appended.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::*;
use gregor::protocol::fetch::DEBUGGING_REPLICA_ID;
use gregor::protocol::{ErrorCode, compression, record_batch};
use gregor::protocol::{message, records::decode_deep};

/// Every message of a replica, decompressed, read as a debugging consumer.
fn replica(c: &Cluster, broker: i32, topic: &str) -> Vec<(i64, Vec<u8>)> {
    let f = c
        .client(broker)
        .fetch_as(DEBUGGING_REPLICA_ID, topic, 0, 0, 0);
    assert_eq!(f.error_code, 0);
    decode_deep(&f.message_set)
        .unwrap()
        .into_iter()
        .map(|m| (m.offset, m.value.unwrap_or_default()))
        .collect()
}

#[test]
fn kcat_gzip_and_snappy_round_trip_through_a_replicated_topic() {
    let c = Cluster::start("compress", 3, &[]);
    for codec in ["gzip", "snappy"] {
        let topic = format!("z-{codec}");
        c.create_topic(&topic, 1, 3);
        let bootstrap = format!("127.0.0.1:{}", c.brokers[&1].port);
        let lines: Vec<String> = (0..200)
            .map(|i| format!("{codec}-message-{i:03}-{}", "x".repeat(i % 50)))
            .collect();
        kcat(
            &[
                "-P", "-b", &bootstrap, "-t", &topic, "-z", codec, "-m", "10",
            ],
            &(lines.join("\n") + "\n"),
        );
        let out = kcat(
            &[
                "-C",
                "-b",
                &bootstrap,
                "-t",
                &topic,
                "-o",
                "beginning",
                "-e",
                "-q",
                "-m",
                "10",
                "-f",
                "%o %s\n",
            ],
            "",
        );
        let want: Vec<String> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{i} {l}"))
            .collect();
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            want,
            "kcat reads back {codec} with dense offsets"
        );
        // gregor's decoder sees the same on every replica once the followers have copied it.
        let leader = c.leader(&topic, 0);
        let from_leader = replica(&c, leader, &topic);
        assert_eq!(from_leader.len(), 200);
        assert!(
            from_leader
                .iter()
                .enumerate()
                .all(|(i, m)| m.0 == i as i64 && m.1 == lines[i].as_bytes())
        );
        for b in 1..=3 {
            wait_until(
                std::time::Duration::from_secs(30),
                "the replica to catch up",
                || replica(&c, b, &topic).len() == 200,
            );
            assert_eq!(replica(&c, b, &topic), from_leader, "broker {b}");
        }
    }
}

#[test]
fn a_corrupt_compressed_payload_is_refused_and_the_log_is_unchanged() {
    let c = Cluster::start("badzip", 1, &[]);
    c.create_topic("z", 1, 1);
    let mut client = c.client(1);
    assert_eq!(client.produce(1, "z", 0, &[b"plain"]).0, 0);
    // A gzip wrapper with a valid CRC over a payload that is not gzip.
    let mut set = Vec::new();
    message::encode_entry_with_attributes(
        &mut set,
        0,
        0,
        compression::GZIP,
        -1,
        None,
        Some(b"\x1f\x8b but not really gzip"),
    );
    assert_eq!(
        client.produce_set(1, "z", 0, &set).0,
        ErrorCode::CorruptMessage.code()
    );
    // A gzip wrapper whose inner message has a bad CRC.
    let mut inner = Vec::new();
    message::encode_entry(&mut inner, 0, 0, -1, None, Some(b"inner"));
    let n = inner.len();
    inner[n - 1] ^= 1;
    let mut set = Vec::new();
    message::encode_entry_with_attributes(
        &mut set,
        0,
        0,
        compression::GZIP,
        -1,
        None,
        Some(&compression::compress(compression::GZIP, &inner).unwrap()),
    );
    assert_eq!(
        client.produce_set(1, "z", 0, &set).0,
        ErrorCode::CorruptMessage.code()
    );
    // An lz4 wrapper whose value is not an LZ4 frame: refused, nothing stored.
    let mut set = Vec::new();
    message::encode_entry_with_attributes(&mut set, 0, 0, 3, -1, None, Some(b"lz4?"));
    assert_eq!(
        client.produce_set(1, "z", 0, &set).0,
        ErrorCode::CorruptMessage.code()
    );
    assert_eq!(client.list_offsets("z", 0, -1).1, vec![1]);
    assert_eq!(replica(&c, 1, "z"), vec![(0, b"plain".to_vec())]);
}

/// The broker's peak resident memory (VmHWM), in MB.
fn peak_mb(c: &Cluster, broker: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", c.pid(broker))).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb / 1024
}

#[test]
fn a_decompression_bomb_is_refused_within_bounded_memory_and_what_is_stored_reads_back() {
    let c = Cluster::start("bomb", 1, &[]);
    c.create_topic("z", 1, 1);
    let mut client = c.client(1);
    // One gzip wrapper holding one 40 MB message: 40 KB on the wire.
    let wrapper = |mb: usize| {
        let mut inner = Vec::new();
        message::encode_entry(&mut inner, 0, 0, -1, None, Some(&vec![0u8; mb << 20]));
        let mut w = Vec::new();
        message::encode_entry_with_attributes(
            &mut w,
            0,
            0,
            compression::GZIP,
            -1,
            None,
            Some(&compression::compress(compression::GZIP, &inner).unwrap()),
        );
        w
    };
    let forty = wrapper(40);
    // The request: 12 of them, 480 MB inflated from under half a megabyte.
    let bomb: Vec<u8> = (0..12).flat_map(|_| forty.iter().copied()).collect();
    assert!(bomb.len() < 1 << 20);
    assert_eq!(
        client.produce_set(1, "z", 0, &bomb).0,
        ErrorCode::RecordListTooLarge.code()
    );
    assert_eq!(client.list_offsets("z", 0, -1).1, vec![0], "nothing stored");
    // It stopped inflating at the 64 MiB budget of one set (was 553 MB for this request).
    let peak = peak_mb(&c, 1);
    assert!(peak < 300, "the broker's peak memory reached {peak} MB");
    // What it does accept, every reader can inflate: two 20 MB wrappers, stored as one.
    let twenty = wrapper(20);
    let two: Vec<u8> = twenty.iter().chain(&twenty).copied().collect();
    assert_eq!(client.produce_set(1, "z", 0, &two).0, 0);
    let stored = replica(&c, 1, "z");
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|(_, v)| v.len() == 20 << 20));
}

/// Compressed sets from many connections at once are inflated a few at a time: eight
/// producers each send a set inflating to 60 MB (three 20 MB messages, each its own gzip
/// wrapper, within the 64 MiB of one set), all at once. Each is stored, and the broker's peak
/// memory stays near `INFLATION_SLOTS` sets' worth; with every connection inflating at once it
/// reached eight sets' worth.
#[test]
fn compressed_sets_from_many_connections_are_inflated_a_few_at_a_time() {
    use gregor::broker::inflation::INFLATION_SLOTS;
    const PRODUCERS: usize = 8;
    let c = Cluster::start("inflation", 1, &[]);
    c.create_topic("z", 1, 1);
    let mut inner = Vec::new();
    message::encode_entry(&mut inner, 0, 0, -1, None, Some(&vec![0u8; 20 << 20]));
    let mut wrapper = Vec::new();
    message::encode_entry_with_attributes(
        &mut wrapper,
        0,
        0,
        compression::GZIP,
        -1,
        None,
        Some(&compression::compress(compression::GZIP, &inner).unwrap()),
    );
    let set: Vec<u8> = (0..3).flat_map(|_| wrapper.iter().copied()).collect();
    let before = peak_mb(&c, 1);
    let start = std::sync::Barrier::new(PRODUCERS);
    let codes: Vec<i16> = std::thread::scope(|s| {
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|_| {
                let mut client = c.client(1);
                let (set, start) = (&set, &start);
                s.spawn(move || {
                    start.wait();
                    client.produce_set(1, "z", 0, set).0
                })
            })
            .collect();
        producers.into_iter().map(|p| p.join().unwrap()).collect()
    });
    assert_eq!(codes, vec![0; PRODUCERS]);
    assert_eq!(client_end(&c), (PRODUCERS * 3) as i64);
    // Each set inflated is 60 MB, and its rebuilt wrapper is made beside it.
    let peak = peak_mb(&c, 1);
    let bound = before + (INFLATION_SLOTS as u64 + 1) * 130;
    assert!(
        peak <= bound,
        "peak memory {peak} MB (from {before} MB) past {bound} MB"
    );
}

fn client_end(c: &Cluster) -> i64 {
    c.client(1).list_offsets("z", 0, -1).1[0]
}

/// The codec of every batch stored in partition 0 of `topic`, in order.
fn stored_codecs(c: &Cluster, topic: &str) -> Vec<i8> {
    let f = c.client(1).fetch_as(DEBUGGING_REPLICA_ID, topic, 0, 0, 0);
    assert_eq!(f.error_code, 0);
    let mut rest = &f.message_set[..];
    let mut codecs = Vec::new();
    while let Ok(b) = record_batch::parse_batch(rest) {
        codecs.push(b.codec());
        rest = &rest[b.bytes().len()..];
    }
    codecs
}

/// kcat sends `n` lines as batches compressed with `codec` (librdkafka's name).
fn kcat_send(c: &Cluster, topic: &str, codec: &str, lines: &[String]) {
    let bootstrap = c.bootstrap();
    kcat(
        &[
            "-P",
            "-b",
            &bootstrap,
            "-t",
            topic,
            "-p",
            "0",
            "-X",
            &format!("compression.codec={codec}"),
        ],
        &(lines.join("\n") + "\n"),
    );
}

/// A topic's `compression.type` set with Kafka 4.4's kafka-configs: kcat's uncompressed
/// batches are stored zstd, its lz4 ones uncompressed once the topic says `uncompressed`, the
/// broker's own dynamic default applies to a topic without one, and kcat reads every record
/// back whatever it was stored as.
#[test]
fn compression_type_stores_batches_in_the_codec_asked_for_and_changes_live() {
    let c = Cluster::start("compress-type", 1, &[]);
    c.create_topic("ct", 1, 1);
    let topic_config = |pair: &str| {
        let args = ["--alter", "--entity-type", "topics", "--entity-name", "ct"];
        let (flag, what) = match pair.contains('=') {
            true => ("--add-config", pair),
            false => ("--delete-config", pair),
        };
        common::dynamic::configs(&c, &[&args[..], &[flag, what]].concat());
    };
    let mut sent: Vec<String> = Vec::new();
    // Sends probes until the last stored batch has `want`: the setting reached the broker.
    let mut send_until = |codec: &str, want: i8, what: &str| {
        wait_until(Duration::from_secs(30), what, || {
            // Long and repetitive: librdkafka sends a batch compression does not shrink as is.
            let line = format!("probe-{}-{}", sent.len(), "z".repeat(500));
            kcat_send(&c, "ct", codec, std::slice::from_ref(&line));
            sent.push(line);
            stored_codecs(&c, "ct").last() == Some(&want)
        });
        let lines: Vec<String> = (0..100)
            .map(|i| format!("{codec}-{i:03}-{}", "y".repeat(i % 40)))
            .collect();
        kcat_send(&c, "ct", codec, &lines);
        sent.extend(lines);
    };
    topic_config("compression.type=zstd");
    send_until(
        "none",
        compression::ZSTD,
        "uncompressed batches stored zstd",
    );
    topic_config("compression.type=uncompressed");
    send_until("lz4", 0, "lz4 batches stored uncompressed");
    // The topic's own setting gone, the brokers' dynamic default applies...
    topic_config("compression.type");
    common::dynamic::add_config(&c, "", "compression.type=gzip");
    send_until("snappy", compression::GZIP, "snappy batches stored gzip");
    // ...and without it, the producer's codec is kept.
    common::dynamic::delete_config(&c, "", "compression.type");
    send_until("lz4", compression::LZ4, "lz4 batches kept lz4");
    let codecs = stored_codecs(&c, "ct");
    assert!(
        codecs.iter().all(|c| [0, 1, 3, 4].contains(c)),
        "{codecs:?}"
    );
    let read = kcat(
        &[
            "-C",
            "-b",
            &c.bootstrap(),
            "-t",
            "ct",
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
        ],
        "",
    );
    assert_eq!(read.lines().collect::<Vec<_>>(), sent);
}
