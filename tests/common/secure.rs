//! Real clients on secured listeners: kcat with `-X` settings, and confluent-kafka through
//! `tests/clients/sasl_client.py`.

use std::process::Command;
use std::time::Duration;

use super::{python, run_with_deadline};

/// kcat against `bootstrap` with librdkafka settings `props` (`security.protocol=…`, …):
/// (success, stdout, stderr).
pub fn kcat_with(
    bootstrap: &str,
    props: &[(&str, &str)],
    args: &[&str],
    stdin: &str,
) -> (bool, String, String) {
    let mut all = vec!["-b".to_owned(), bootstrap.to_owned()];
    for (k, v) in props {
        all.push("-X".to_owned());
        all.push(format!("{k}={v}"));
    }
    all.extend(args.iter().map(|a| a.to_string()));
    run_with_deadline(
        Command::new("kcat").args(&all),
        stdin,
        Duration::from_secs(60),
    )
}

/// kcat's arguments to read partition 0 of `topic` from its beginning to its end, one value
/// a line.
pub fn read_args(topic: &str) -> [&str; 10] {
    [
        "-C",
        "-t",
        topic,
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-f",
        "%s\n",
    ]
}

/// kcat logging in with SASL `mech` as `user` on a SASL_PLAINTEXT listener.
pub fn kcat_as(
    bootstrap: &str,
    mech: &str,
    user: &str,
    password: &str,
    args: &[&str],
    stdin: &str,
) -> (bool, String, String) {
    let props = [
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanisms", mech),
        ("sasl.username", user),
        ("sasl.password", password),
    ];
    kcat_with(bootstrap, &props, args, stdin)
}

/// `tests/clients/sasl_client.py` with `env` (SECURITY_PROTOCOL, SSL_CA); its stdout, or a
/// panic with its output.
pub fn sasl_client_env(
    env: &[(&str, &str)],
    bootstrap: &str,
    mech: &str,
    user: &str,
    password: &str,
    args: &[&str],
) -> String {
    let (ok, out, err) = sasl_client_try(env, bootstrap, mech, user, password, args);
    assert!(ok, "sasl_client.py {args:?} failed:\n{out}\n{err}");
    out
}

/// `sasl_client.py` that may fail: (success, stdout, stderr).
pub fn sasl_client_try(
    env: &[(&str, &str)],
    bootstrap: &str,
    mech: &str,
    user: &str,
    password: &str,
    args: &[&str],
) -> (bool, String, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/sasl_client.py");
    let mut cmd = python();
    cmd.args([script, bootstrap, mech, user, password])
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_with_deadline(&mut cmd, "", Duration::from_secs(180))
}

pub fn sasl_client(
    bootstrap: &str,
    mech: &str,
    user: &str,
    password: &str,
    args: &[&str],
) -> String {
    sasl_client_env(&[], bootstrap, mech, user, password, args)
}
