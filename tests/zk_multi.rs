//! ZooKeeper's multi-node requests as the controller uses them against a real server:
//! `multiRead` answering each node on its own, and `multi` writing all or none.

mod common;

use std::time::Duration;

use gregor::zk::{ZkClient, ZkError};

fn client(name: &str) -> std::sync::Arc<ZkClient> {
    common::init_logging();
    let zk = ZkClient::connect(
        &format!("{}{}", common::zk_address(), common::chroot(name)),
        Duration::from_secs(6),
    )
    .unwrap();
    zk.ensure_path("/n").unwrap();
    zk
}

#[test]
fn many_nodes_are_read_in_one_request_each_with_its_own_answer() {
    let zk = client("multi-read");
    let mut paths = Vec::new();
    for i in 0..600 {
        let p = format!("/n/{i}");
        zk.create_persistent(&p, format!("value {i}").into_bytes())
            .unwrap();
        paths.push(p);
    }
    zk.set_data("/n/7", b"seven".to_vec(), None).unwrap();
    paths.insert(300, "/n/missing".to_owned());
    let answers = zk.get_data_each(&paths).unwrap();
    assert_eq!(answers.len(), 601);
    for (p, a) in paths.iter().zip(&answers) {
        match p.as_str() {
            "/n/missing" => assert_eq!(a.as_ref().unwrap_err(), &ZkError::NoNode),
            "/n/7" => {
                let (data, stat) = a.as_ref().unwrap();
                assert_eq!((data.as_slice(), stat.version), (&b"seven"[..], 1));
            }
            _ => {
                let (data, stat) = a.as_ref().unwrap();
                let i = &p["/n/".len()..];
                assert_eq!(data, format!("value {i}").as_bytes());
                assert_eq!(stat.version, 0);
            }
        }
    }
    assert_eq!(zk.get_data_each(&[]).unwrap(), Vec::new());
    zk.delete_recursive("/n").unwrap();
}

#[test]
fn conditional_writes_in_one_transaction_happen_all_or_none() {
    let zk = client("multi-write");
    for i in 0..3 {
        zk.create_persistent(&format!("/n/{i}"), b"0".to_vec())
            .unwrap();
    }
    let writes = |versions: [i32; 3], value: &str| -> Vec<(String, Vec<u8>, i32)> {
        (0..3)
            .map(|i| (format!("/n/{i}"), value.as_bytes().to_vec(), versions[i]))
            .collect()
    };
    let stats = zk.set_data_all(&writes([0, 0, 0], "a")).unwrap().unwrap();
    assert_eq!(
        stats.iter().map(|s| s.version).collect::<Vec<_>>(),
        [1, 1, 1]
    );
    // The second write's version is stale: nothing is written, and it is named.
    assert_eq!(
        zk.set_data_all(&writes([1, 0, 1], "b")).unwrap(),
        Err((1, ZkError::BadVersion))
    );
    for i in 0..3 {
        let (data, stat) = zk.get_data(&format!("/n/{i}")).unwrap();
        assert_eq!((data.as_slice(), stat.version), (&b"a"[..], 1), "node {i}");
    }
    let mut gone = writes([1, 1, 1], "c");
    gone[2].0 = "/n/none".to_owned();
    assert_eq!(zk.set_data_all(&gone).unwrap(), Err((2, ZkError::NoNode)));
    assert_eq!(zk.get_data("/n/0").unwrap().0, b"a");
    zk.delete_recursive("/n").unwrap();
}
