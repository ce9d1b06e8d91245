//! ACLs (`authorizer.class.name=kafka.security.authorizer.AclAuthorizer`) through real
//! clients: created, listed and deleted with confluent-kafka's AdminClient and `gregor acls`,
//! kept in ZooKeeper in Kafka's layout, enforced on every broker within seconds of a change
//! and after every broker restarted; Metadata answers only the topics a principal may
//! Describe; Deny wins over Allow; a group needs Read.
//!
//! The brokers talk to each other on their PLAINTEXT listener as `User:ANONYMOUS`, which (as
//! the test's own helpers' principal) is a super user; clients log in with SASL PLAIN.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::cluster::Cluster;
use common::prometheus::scrape;
use common::secure::{kcat_as, sasl_client_env, sasl_client_try};
use common::{free_port, gregor_ok, wait_until};
use gregor::zk::paths::from_json;

const USERS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw" user_alice="alice-pw" user_bob="bob-pw";"#;

fn start(name: &str, n: i32) -> (Cluster, Vec<SocketAddr>) {
    let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
    let own = ports.clone();
    let c = Cluster::start_each(
        name,
        n,
        &[
            (
                "authorizer.class.name",
                "kafka.security.authorizer.AclAuthorizer",
            ),
            ("super.users", "User:ANONYMOUS;User:admin"),
            ("inter.broker.listener.name", "PLAINTEXT"),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", USERS),
            ("metrics.listener", "127.0.0.1:0"),
        ],
        move |id| {
            vec![(
                "listeners".to_owned(),
                format!(
                    "PLAINTEXT://127.0.0.1:{{port}},SASL_PLAINTEXT://127.0.0.1:{}",
                    own[(id - 1) as usize]
                ),
            )]
        },
    );
    let sasl = ports
        .iter()
        .map(|p| SocketAddr::from(([127, 0, 0, 1], *p)))
        .collect();
    (c, sasl)
}

fn joined(a: &[SocketAddr]) -> String {
    a.iter()
        .map(SocketAddr::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn python(bootstrap: &str, user: &str, args: &[&str]) -> (bool, String, String) {
    sasl_client_try(&[], bootstrap, "PLAIN", user, &format!("{user}-pw"), args)
}

/// Whether `user` can produce one message to each partition of `topic` (each on its leader).
fn produces_everywhere(bootstrap: &str, user: &str, topic: &str, partitions: i32) -> bool {
    (0..partitions).all(|p| {
        let args = [
            "-P",
            "-t",
            topic,
            "-p",
            &p.to_string(),
            "-X",
            "message.timeout.ms=5000",
        ];
        kcat_as(
            bootstrap,
            "PLAIN",
            user,
            &format!("{user}-pw"),
            &args,
            "m\n",
        )
        .0
    })
}

/// The topics `user`'s all-topics Metadata lists.
fn listed_topics(bootstrap: &str, user: &str) -> Vec<String> {
    let (ok, out, err) = kcat_as(bootstrap, "PLAIN", user, &format!("{user}-pw"), &["-L"], "");
    assert!(ok, "{err}");
    let mut topics: Vec<String> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("topic \""))
        .filter_map(|l| l.split('"').next().map(str::to_owned))
        .collect();
    topics.sort();
    topics
}

#[test]
fn acls_hold_on_every_broker_from_any_tool_and_after_restarts() {
    let (mut c, sasl) = start("acls", 3);
    let bootstrap = joined(&sasl);
    c.create_topic("orders", 3, 3);
    c.create_topic("secret", 1, 3);
    c.wait_all_led("orders");

    // No ACL names these topics, and allow.everyone.if.no.acl.found is false.
    assert!(!produces_everywhere(&bootstrap, "alice", "orders", 1));
    assert!(listed_topics(&bootstrap, "alice").is_empty());

    // gregor acls (as the plaintext super user): alice may write and describe orders.
    let out = gregor_ok(
        &[
            "acls",
            "-b",
            &c.bootstrap(),
            "--add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Write",
            "--operation",
            "Describe",
            "--topic",
            "orders",
        ],
        "",
    );
    assert!(out.contains("Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`"), "{out}");
    // In force on every broker (each leads one partition) within seconds.
    wait_until(
        Duration::from_secs(20),
        "alice to produce to every partition",
        || produces_everywhere(&bootstrap, "alice", "orders", 3),
    );
    assert_eq!(listed_topics(&bootstrap, "alice"), ["orders"]);
    assert!(!produces_everywhere(&bootstrap, "alice", "secret", 1));

    // confluent-kafka's AdminClient (as the admin super user): bob may read orders in his
    // group, by a prefixed pattern.
    for args in [
        [
            "create-acl",
            "User:bob",
            "TOPIC",
            "ord",
            "READ",
            "ALLOW",
            "PREFIXED",
        ],
        [
            "create-acl",
            "User:bob",
            "GROUP",
            "bob-group",
            "READ",
            "ALLOW",
            "LITERAL",
        ],
    ] {
        sasl_client_env(&[], &bootstrap, "PLAIN", "admin", "admin-pw", &args);
    }
    let acls = sasl_client_env(
        &[],
        &bootstrap,
        "PLAIN",
        "admin",
        "admin-pw",
        &["describe-acls"],
    );
    for want in [
        "acl User:alice TOPIC orders LITERAL WRITE ALLOW",
        "acl User:bob TOPIC ord PREFIXED READ ALLOW",
        "acl User:bob GROUP bob-group LITERAL READ ALLOW",
    ] {
        assert!(acls.contains(want), "{want} in {acls}");
    }
    wait_until(
        Duration::from_secs(20),
        "bob to read orders in his group",
        || {
            python(
                &bootstrap,
                "bob",
                &["consume-group", "orders", "bob-group", "3"],
            )
            .0
        },
    );
    // Not in another group, and no writing.
    let (ok, _, err) = python(
        &bootstrap,
        "bob",
        &["consume-group", "orders", "other-group", "1"],
    );
    assert!(!ok && err.contains("GROUP_AUTHORIZATION_FAILED"), "{err}");
    let (ok, _, err) = python(&bootstrap, "bob", &["produce", "orders", "1"]);
    assert!(!ok && err.contains("TOPIC_AUTHORIZATION_FAILED"), "{err}");
    // Nor may bob change ACLs.
    let (ok, _, err) = python(
        &bootstrap,
        "bob",
        &["create-acl", "User:bob", "TOPIC", "secret", "READ", "ALLOW"],
    );
    assert!(!ok && err.contains("CLUSTER_AUTHORIZATION_FAILED"), "{err}");

    // Deny wins: a Deny of Write for alice on orders, through gregor acls.
    gregor_ok(
        &[
            "acls",
            "-b",
            &c.bootstrap(),
            "--add",
            "--deny-principal",
            "User:alice",
            "--operation",
            "Write",
            "--topic",
            "orders",
        ],
        "",
    );
    wait_until(
        Duration::from_secs(20),
        "alice's Deny on every broker",
        || {
            (0..3).all(|p| {
                let args = [
                    "-P",
                    "-t",
                    "orders",
                    "-p",
                    &p.to_string(),
                    "-X",
                    "message.timeout.ms=3000",
                ];
                !kcat_as(&bootstrap, "PLAIN", "alice", "alice-pw", &args, "m\n").0
            })
        },
    );

    // Kafka's layout in ZooKeeper.
    let (data, _) = c.zk.get_data("/kafka-acl/Topic/orders").unwrap();
    let node: serde_json::Value = from_json("/kafka-acl/Topic/orders", &data).unwrap();
    assert_eq!(node["version"], 1);
    assert!(
        node["acls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["principal"] == "User:alice"
                && a["permissionType"] == "Deny"
                && a["operation"] == "Write"
                && a["host"] == "*")
    );
    assert!(
        c.zk.exists("/kafka-acl-extended/prefixed/Topic/ord")
            .unwrap()
            .is_some()
    );

    // Every broker restarted: the ACLs are read back from ZooKeeper.
    for id in 1..=3 {
        c.terminate(id);
        c.restart(id);
    }
    c.wait_all_led("orders");
    // bob's group has read everything so far: something new to read, from the super user.
    assert!(produces_everywhere(&bootstrap, "admin", "orders", 1));
    wait_until(
        Duration::from_secs(30),
        "bob to read after the restarts",
        || {
            python(
                &bootstrap,
                "bob",
                &["consume-group", "orders", "bob-group", "1"],
            )
            .0
        },
    );
    assert!(!produces_everywhere(&bootstrap, "alice", "orders", 1));

    // gregor acls --list, then --remove; the AdminClient deletes bob's.
    let out = gregor_ok(
        &["acls", "-b", &c.bootstrap(), "--list", "--topic", "orders"],
        "",
    );
    assert!(
        out.contains("(principal=User:alice, host=*, operation=WRITE, permissionType=DENY)"),
        "{out}"
    );
    gregor_ok(
        &[
            "acls",
            "-b",
            &c.bootstrap(),
            "--remove",
            "--deny-principal",
            "User:alice",
            "--operation",
            "Write",
            "--topic",
            "orders",
        ],
        "",
    );
    wait_until(Duration::from_secs(20), "alice to produce again", || {
        produces_everywhere(&bootstrap, "alice", "orders", 3)
    });
    let deleted = sasl_client_env(
        &[],
        &bootstrap,
        "PLAIN",
        "admin",
        "admin-pw",
        &["delete-acls", "User:bob"],
    );
    assert_eq!(
        deleted
            .lines()
            .filter(|l| l.starts_with("deleted User:bob"))
            .count(),
        2,
        "{deleted}"
    );
    assert!(produces_everywhere(&bootstrap, "admin", "orders", 1));
    wait_until(Duration::from_secs(20), "bob to lose his reads", || {
        !python(
            &bootstrap,
            "bob",
            &["consume-group", "orders", "bob-group", "1"],
        )
        .0
    });
    let denied: f64 = (1..=3)
        .flat_map(|id| scrape(c.metrics_addr(id)).samples)
        .filter(|((n, _), _)| n == "kafka_server_authorizer_metrics_authorization_denied_total")
        .map(|(_, v)| v)
        .sum();
    assert!(denied > 0.0);
}
