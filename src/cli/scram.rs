//! The SCRAM part of `gregor configs --entity-type users`, with kafka-configs' syntax:
//! `--add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=…]'`
//! and `--delete-config SCRAM-SHA-256`. Through a broker (`--bootstrap-server`, with
//! AlterUserScramCredentials: the password is salted here and only the salted password is
//! sent), or straight into ZooKeeper (`--zookeeper`), which is how the first user — the one
//! the brokers themselves log in as — is made before any broker runs.

use gregor::network::BlockingChannel;
use gregor::protocol::scram_credentials::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, ScramUpsertion,
};
use gregor::protocol::{ErrorCode, header};
use gregor::security::ScramCredential;
use gregor::security::scram::{MIN_ITERATIONS, ScramMechanism, random_bytes};

/// One `--add-config` or `--delete-config` entry about SCRAM.
pub struct ScramChange {
    pub set: Vec<(ScramMechanism, i32, String)>,
    pub delete: Vec<ScramMechanism>,
}

/// Splits kafka-configs' `k=v,k=[a=1,b=2]` at the commas outside brackets.
pub fn split_entries(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect()
}

/// `SCRAM-SHA-256=[iterations=8192,password=…]`: the mechanism, iterations and password.
pub fn parse_set(key: &str, value: &str) -> Result<(ScramMechanism, i32, String), String> {
    let mech =
        ScramMechanism::from_name(key).ok_or_else(|| format!("unknown mechanism `{key}`"))?;
    let inner = value
        .trim()
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .ok_or_else(|| format!("{key} expects [iterations=N,password=P], or [password=P]"))?;
    let (mut iterations, mut password) = (MIN_ITERATIONS, None);
    for part in inner.split(',') {
        match part.split_once('=') {
            Some(("iterations", n)) => {
                iterations = n
                    .trim()
                    .parse()
                    .map_err(|_| format!("{key}: iterations must be a number"))?;
            }
            // The password may itself hold `=`: everything after the first.
            Some(("password", p)) => password = Some(p.to_owned()),
            _ => return Err(format!("{key}: expected iterations=N or password=P")),
        }
    }
    let password = password.ok_or_else(|| format!("{key} needs password=…"))?;
    mech.check_iterations(iterations)?;
    Ok((mech, iterations, password))
}

pub fn is_scram_key(key: &str) -> bool {
    ScramMechanism::from_name(key).is_some()
}

/// Sends the change through a broker.
pub fn alter_via_broker(
    chan: &mut BlockingChannel,
    user: &str,
    c: &ScramChange,
) -> Result<(), String> {
    let upsertions = c
        .set
        .iter()
        .map(|(m, iterations, password)| {
            let salt = random_bytes(32);
            ScramUpsertion {
                name: user.to_owned(),
                mechanism: m.code(),
                iterations: *iterations,
                salted_password: m.salted_password(password.as_bytes(), &salt, *iterations),
                salt,
            }
        })
        .collect();
    let req = AlterUserScramCredentialsRequest {
        deletions: c
            .delete
            .iter()
            .map(|m| (user.to_owned(), m.code()))
            .collect(),
        upsertions,
    };
    let answer: AlterUserScramCredentialsResponse = chan
        .send(header::ALTER_USER_SCRAM_CREDENTIALS, 0, &req)
        .map_err(|e| e.to_string())?;
    for (u, code, message) in answer.results {
        if code != 0 {
            let e = ErrorCode::from_code(code);
            return Err(format!(
                "user {u}: {} ({e:?}, error {code})",
                message.unwrap_or_default()
            ));
        }
    }
    Ok(())
}

/// Writes the change into ZooKeeper (`--zookeeper`), as Kafka's tool does for the first user.
pub fn alter_via_zookeeper(zk_connect: &str, user: &str, c: &ScramChange) -> Result<(), String> {
    let zk = gregor::zk::ZkClient::connect(zk_connect, std::time::Duration::from_secs(10))
        .map_err(|e| format!("cannot reach ZooKeeper at {zk_connect}: {e:?}"))?;
    let set: Vec<_> = c
        .set
        .iter()
        .map(|(m, i, p)| (*m, ScramCredential::from_password(*m, p, *i)))
        .collect();
    let result = gregor::zk::scram_credentials::alter(&zk, user, &set, &c.delete)
        .map_err(|e| format!("ZooKeeper: {e:?}"));
    zk.close();
    match result? {
        missing if missing.is_empty() => Ok(()),
        missing => Err(format!(
            "user {user} has no {} credential to delete",
            missing
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// kafka-configs' lines for users' credentials: `SCRAM credential configs for
/// user-principal 'alice' are SCRAM-SHA-256=iterations=8192`.
pub fn describe(chan: &mut BlockingChannel, user: Option<&str>) -> Result<Vec<String>, String> {
    let req = DescribeUserScramCredentialsRequest {
        users: user.map(|u| vec![u.to_owned()]),
    };
    let answer: DescribeUserScramCredentialsResponse = chan
        .send(header::DESCRIBE_USER_SCRAM_CREDENTIALS, 0, &req)
        .map_err(|e| e.to_string())?;
    if answer.error_code != 0 {
        return Err(answer.error_message.unwrap_or_default());
    }
    let mut lines = Vec::new();
    for r in answer.results {
        // A named user without credentials simply has none to show.
        if r.error_code == ErrorCode::ResourceNotFound.code() {
            continue;
        }
        if r.error_code != 0 {
            return Err(format!(
                "user {}: {}",
                r.user,
                r.error_message.unwrap_or_default()
            ));
        }
        let creds: Vec<String> = r
            .credentials
            .iter()
            .filter_map(|(m, i)| {
                ScramMechanism::from_code(*m).map(|m| format!("{}=iterations={i}", m.name()))
            })
            .collect();
        lines.push(format!(
            "SCRAM credential configs for user-principal '{}' are {}",
            r.user,
            creds.join(", ")
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_configs_syntax_is_read() {
        assert_eq!(
            split_entries("SCRAM-SHA-256=[iterations=8192,password=a,b],producer_byte_rate=10"),
            [
                "SCRAM-SHA-256=[iterations=8192,password=a,b]",
                "producer_byte_rate=10"
            ]
        );
        let (m, i, p) = parse_set("SCRAM-SHA-512", "[password=x=y]").unwrap();
        assert_eq!((m, i, p.as_str()), (ScramMechanism::Sha512, 4096, "x=y"));
        assert!(
            parse_set("SCRAM-SHA-256", "[iterations=10,password=x]")
                .unwrap_err()
                .contains("Too few")
        );
        assert!(parse_set("SCRAM-SHA-256", "password=x").is_err());
        assert!(parse_set("SCRAM-SHA-1", "[password=x]").is_err());
    }
}
