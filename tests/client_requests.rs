//! What real clients send, decoded: librdkafka (confluent-kafka), kafka-python, aiokafka and
//! the Java client each run an application's worth of calls (`tests/clients/every_api.py`,
//! the Java `AdminTopics` and `ProduceConsume`) against a broker whose advertised address is a
//! recording proxy, so every request of every connection passes through it. Each recorded
//! request must decode with gregor's decoder for its API and version, and the broker must not
//! have closed a connection over one. The schema tests cover the layouts of Kafka's published
//! schemas; this covers the encoding choices of the clients themselves (librdkafka 2.16's
//! Metadata for all topics carries 3 bytes after its last field, which gregor once refused).
//! The requests are kept in `target/tmp/client-requests/`, one file per client.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use common::cluster::Cluster;
use common::java::JavaProgram;
use common::requests::decode_and_reencode;
use common::run_with_deadline;
use gregor::protocol::Reader;
use gregor::protocol::header::{
    API_VERSIONS, FETCH, RequestHeader, api_name, is_inter_broker, is_supported,
};
use parking_lot::Mutex;

/// Requests seen, with the client that was running when each was sent.
type Recorded = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// Forwards every connection to `target`, recording each request frame under the current
/// label; the answers go back untouched.
fn recording_proxy(
    listener: TcpListener,
    target: SocketAddr,
    label: Arc<Mutex<String>>,
    rec: Recorded,
) {
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let Ok(broker) = TcpStream::connect(target) else {
                continue;
            };
            let (rec, label) = (rec.clone(), label.clone());
            let (mut from_broker, mut to_client) =
                (broker.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_broker, &mut to_client);
                let _ = to_client.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                let (mut from_client, mut to_broker) = (client, broker);
                let mut size = [0u8; 4];
                while from_client.read_exact(&mut size).is_ok() {
                    let mut frame = vec![0u8; i32::from_be_bytes(size).max(0) as usize];
                    if from_client.read_exact(&mut frame).is_err() {
                        break;
                    }
                    rec.lock().push((label.lock().clone(), frame.clone()));
                    if to_broker.write_all(&size).is_err() || to_broker.write_all(&frame).is_err() {
                        break;
                    }
                }
                let _ = to_broker.shutdown(std::net::Shutdown::Both);
            });
        }
    });
}

#[test]
fn every_request_of_every_client_decodes() {
    // Three brokers (the Java admin program wants replication factor 2), each advertising a
    // proxy of its own.
    let listeners: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let proxies: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
    let c = Cluster::start_each("client-requests", 3, &[], |id| {
        let proxy = proxies[(id - 1) as usize];
        vec![(
            "advertised.listeners".to_owned(),
            format!("PLAINTEXT://{proxy}"),
        )]
    });
    let label = Arc::new(Mutex::new(String::new()));
    let recorded: Recorded = Arc::default();
    for (id, listener) in (1..=3).zip(listeners) {
        recording_proxy(listener, c.addr(id), label.clone(), recorded.clone());
    }
    let bootstrap = proxies[0].to_string();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/every_api.py");
    for client in ["confluent", "kafka-python", "aiokafka"] {
        *label.lock() = client.to_owned();
        let prefix = client.replace('-', "");
        let (ok, out, err) = run_with_deadline(
            common::python().args([script, client, &bootstrap, &prefix]),
            "",
            Duration::from_secs(180),
        );
        assert!(ok, "{client}: every_api.py failed:\n{out}\n{err}");
    }
    *label.lock() = "java".to_owned();
    c.create_topic("java-t", 1, 3);
    let (ok, out, err) = JavaProgram::compile("ProduceConsume").run(
        &[&bootstrap, "java-t", "5", "lz4"],
        Duration::from_secs(120),
    );
    assert!(ok, "ProduceConsume failed:\n{out}\n{err}");
    let (ok, out, err) =
        JavaProgram::compile("AdminTopics").run(&[&bootstrap, "java"], Duration::from_secs(120));
    assert!(ok, "AdminTopics failed:\n{out}\n{err}");

    // Each request decodes; what each client sent, by API and version, is kept.
    let kept = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("client-requests");
    std::fs::create_dir_all(&kept).unwrap();
    let mut seen: BTreeMap<String, BTreeMap<(i16, i16), usize>> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for (client, frame) in recorded.lock().iter() {
        let mut r = Reader::new(frame);
        let h = RequestHeader::decode(&mut r).unwrap_or_else(|e| panic!("{client}: header: {e}"));
        let body = &frame[r.position()..];
        // The brokers talk to each other through the proxies too (they advertise them):
        // their controller requests and their followers' fetches are gregor's own.
        let follower_fetch =
            h.api_key == FETCH && Reader::new(body).i32("replica_id").is_ok_and(|id| id >= 0);
        if is_inter_broker(h.api_key) || follower_fetch {
            continue;
        }
        let name = api_name(h.api_key).unwrap_or("?");
        let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
        files
            .entry(client.clone())
            .or_default()
            .push_str(&format!("{name} v{} {hex}\n", h.api_version));
        *seen
            .entry(client.clone())
            .or_default()
            .entry((h.api_key, h.api_version))
            .or_default() += 1;
        // An ApiVersions request at a version gregor does not serve is answered with 35
        // UNSUPPORTED_VERSION and the versions it serves (Kafka's rule), not decoded: the
        // client asks again at one of them (kafka-python tries v4 first).
        if h.api_key == API_VERSIONS && !is_supported(h.api_key, h.api_version) {
            continue;
        }
        if let Err(e) = decode_and_reencode(h.api_key, h.api_version, body) {
            failures.push(format!("{client}: {name} v{}: {e}: {hex}", h.api_version));
        }
    }
    for (client, text) in &files {
        std::fs::write(kept.join(format!("{client}.txt")), text).unwrap();
    }
    let table: Vec<String> = seen
        .iter()
        .map(|(client, apis)| {
            let apis: Vec<String> = apis
                .keys()
                .map(|(k, v)| format!("{} v{v}", api_name(*k).unwrap_or("?")))
                .collect();
            format!("{client}: {}", apis.join(", "))
        })
        .collect();
    eprintln!("requests seen:\n{}", table.join("\n"));
    assert!(
        failures.is_empty(),
        "requests gregor cannot decode:\n{}",
        failures.join("\n")
    );
    for client in ["confluent", "kafka-python", "aiokafka", "java"] {
        let apis = &seen[client];
        for key in [3, 0, 1, 10, 11, 14, 8] {
            assert!(
                apis.keys().any(|(k, _)| *k == key),
                "{client} sent no {} request: {table:?}",
                api_name(key).unwrap_or("?")
            );
        }
    }
    let log = c.log_of(1);
    let closed: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("closing connection"))
        .collect();
    assert!(
        closed.is_empty(),
        "the broker closed connections:\n{}",
        closed.join("\n")
    );
}
