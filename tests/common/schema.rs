//! The harness of the schema tests: a script of `tests/clients/` prints `KEY VERSION HEX` per
//! message, encoded by kafka-python's schema-generated classes; each must decode with
//! gregor and encode back to the same bytes, and together they must cover every version of
//! every client API gregor serves (the script is given them from `SUPPORTED_APIS`).

use std::collections::BTreeSet;
use std::time::Duration;

use gregor::protocol::header::SUPPORTED_APIS;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Runs `script` and checks each message it prints with `reencode` (gregor's decode then
/// encode of one body).
pub fn check_against_schemas(
    script: &str,
    reencode: impl Fn(i16, i16, &[u8]) -> Result<Vec<u8>, String>,
) {
    let served_list: Vec<String> = SUPPORTED_APIS
        .iter()
        .filter(|a| !a.inter_broker)
        .map(|a| format!("{}:{}-{}", a.key, a.min, a.max))
        .collect();
    let mut cmd = super::python();
    // The script writes a message for each of these versions: the table is the only list.
    cmd.arg(script).env("GREGOR_SERVED", served_list.join(","));
    let (ok, out, err) = super::run_with_deadline(&mut cmd, "", Duration::from_secs(60));
    assert!(
        ok,
        "kafka-python (installed by scripts/test.sh) failed: {err}"
    );
    let mut checked = BTreeSet::new();
    for line in out.lines() {
        let mut f = line.split_whitespace();
        let key: i16 = f.next().unwrap().parse().unwrap();
        let v: i16 = f.next().unwrap().parse().unwrap();
        let body = unhex(f.next().unwrap_or(""));
        match reencode(key, v, &body) {
            Ok(back) => assert_eq!(back, body, "api {key} v{v}"),
            Err(e) => panic!("api {key} v{v} does not decode: {e}"),
        }
        checked.insert((key, v));
    }
    let served: BTreeSet<(i16, i16)> = SUPPORTED_APIS
        .iter()
        .filter(|a| !a.inter_broker)
        .flat_map(|a| (a.min..=a.max).map(move |v| (a.key, v)))
        .collect();
    assert_eq!(checked, served, "{out}");
}
