//! DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), KIP-554: users'
//! SCRAM credentials as ZooKeeper holds them (`zk::scram_credentials`). Any broker answers; a
//! change is checked whole per user before anything of that user is written, then written
//! to the user's node and announced, so every broker applies it from the notice (this one at
//! once). The answers name mechanisms and iteration counts only — never a salt or a key.

use crate::security::acl::Operation;
use std::collections::BTreeMap;

use super::{KafkaApis, RequestContext};
use crate::network::{Action, Response};
use crate::protocol::ErrorCode;
use crate::protocol::scram_credentials::{
    AlterScramResult, AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, UserScramResult,
};
use crate::security::{ScramCredential, ScramMechanism};
use crate::zk::scram_credentials::{self, UserCredentials};

fn infos(creds: &UserCredentials) -> Vec<(i8, i32)> {
    creds
        .iter()
        .map(|(m, c)| (m.code(), c.iterations))
        .collect()
}

fn user_error(user: &str, code: ErrorCode, message: String) -> UserScramResult {
    UserScramResult {
        user: user.to_owned(),
        error_code: code.code(),
        error_message: Some(message),
        credentials: Vec::new(),
    }
}

/// One user's part of an alteration.
#[derive(Default)]
struct Change {
    set: Vec<(ScramMechanism, ScramCredential)>,
    delete: Vec<ScramMechanism>,
    /// The first thing wrong with it, which refuses all of it.
    refused: Option<(ErrorCode, String)>,
}

impl Change {
    fn refuse(&mut self, code: ErrorCode, why: &str) {
        self.refused.get_or_insert((code, why.to_owned()));
    }

    fn mechanism(&mut self, code: i8) -> Option<ScramMechanism> {
        let m = ScramMechanism::from_code(code);
        if m.is_none() {
            self.refuse(
                ErrorCode::UnsupportedSaslMechanism,
                "Unknown SCRAM mechanism",
            );
        }
        m
    }

    fn check_once(&mut self, m: ScramMechanism) {
        let twice = self.delete.contains(&m) || self.set.iter().any(|(s, _)| *s == m);
        if twice {
            self.refuse(
                ErrorCode::DuplicateResource,
                "A user credential cannot be altered twice in the same request",
            );
        }
    }
}

/// The change of `user`, added (in request order) at its first mention.
fn change_of<'a>(
    order: &mut Vec<String>,
    changes: &'a mut BTreeMap<String, Change>,
    user: &str,
) -> &'a mut Change {
    if !order.iter().any(|u| u == user) {
        order.push(user.to_owned());
    }
    let c = changes.entry(user.to_owned()).or_default();
    if user.is_empty() {
        c.refuse(
            ErrorCode::UnacceptableCredential,
            "Username must not be empty",
        );
    }
    c
}

impl KafkaApis {
    pub(super) fn handle_describe_user_scram_credentials(
        &self,
        req: &DescribeUserScramCredentialsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        if !self.cluster_allowed(cx, Operation::Describe) {
            let resp = DescribeUserScramCredentialsResponse {
                error_code: ErrorCode::ClusterAuthorizationFailed.code(),
                error_message: Some("not authorized to describe user credentials".into()),
                results: Vec::new(),
            };
            cx.answer(out, &resp);
            return Action::Respond;
        }
        let resp = match self.describe_scram(req.users.as_deref().unwrap_or_default()) {
            Ok(results) => DescribeUserScramCredentialsResponse {
                error_code: 0,
                error_message: None,
                results,
            },
            Err(e) => DescribeUserScramCredentialsResponse {
                error_code: ErrorCode::UnknownServerError.code(),
                error_message: Some(format!("ZooKeeper: {e:?}")),
                results: Vec::new(),
            },
        };
        cx.answer(out, &resp);
        Action::Respond
    }

    fn describe_scram(&self, users: &[String]) -> Result<Vec<UserScramResult>, crate::zk::ZkError> {
        if users.is_empty() {
            let all = scram_credentials::read_all(&self.zk)?;
            return Ok(all
                .iter()
                .map(|(u, c)| UserScramResult {
                    user: u.clone(),
                    error_code: 0,
                    error_message: None,
                    credentials: infos(c),
                })
                .collect());
        }
        let mut out = Vec::new();
        for (i, u) in users.iter().enumerate() {
            if users.iter().filter(|x| *x == u).count() > 1 {
                if users[..i].contains(u) {
                    continue;
                }
                out.push(user_error(
                    u,
                    ErrorCode::DuplicateResource,
                    format!("Cannot describe SCRAM credentials for the same user twice in a single request: {u}"),
                ));
                continue;
            }
            let creds = scram_credentials::read(&self.zk, u)?;
            out.push(if creds.is_empty() {
                user_error(
                    u,
                    ErrorCode::ResourceNotFound,
                    format!("Attempt to describe a user credential that does not exist: {u}"),
                )
            } else {
                UserScramResult {
                    user: u.clone(),
                    error_code: 0,
                    error_message: None,
                    credentials: infos(&creds),
                }
            });
        }
        Ok(out)
    }

    pub(super) fn handle_alter_user_scram_credentials(
        &self,
        req: &AlterUserScramCredentialsRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        // Grouped by user, in the order users first appear.
        let mut order: Vec<String> = Vec::new();
        let mut changes: BTreeMap<String, Change> = BTreeMap::new();
        for (user, code) in &req.deletions {
            let c = change_of(&mut order, &mut changes, user);
            if let Some(m) = c.mechanism(*code) {
                c.check_once(m);
                c.delete.push(m);
            }
        }
        for u in &req.upsertions {
            let c = change_of(&mut order, &mut changes, &u.name);
            let Some(m) = c.mechanism(u.mechanism) else {
                continue;
            };
            c.check_once(m);
            if let Err(why) = m.check_iterations(u.iterations) {
                c.refuse(ErrorCode::UnacceptableCredential, &why);
            }
            if u.salt.is_empty() || u.salted_password.is_empty() {
                c.refuse(
                    ErrorCode::UnacceptableCredential,
                    "A credential needs a salt and a salted password",
                );
            }
            let cred =
                ScramCredential::from_salted_password(m, &u.salt, &u.salted_password, u.iterations);
            c.set.push((m, cred));
        }
        let may_alter = self.cluster_allowed(cx, Operation::Alter);
        let results: Vec<AlterScramResult> = order
            .iter()
            .map(|user| match may_alter {
                true => self.alter_scram(user, &changes[user]),
                false => (
                    user.clone(),
                    ErrorCode::ClusterAuthorizationFailed.code(),
                    Some("not authorized to alter user credentials".into()),
                ),
            })
            .collect();
        cx.answer(out, &AlterUserScramCredentialsResponse { results });
        Action::Respond
    }

    fn alter_scram(&self, user: &str, c: &Change) -> AlterScramResult {
        let refuse = |code: ErrorCode, why: String| (user.to_owned(), code.code(), Some(why));
        if let Some((code, why)) = &c.refused {
            return refuse(*code, why.clone());
        }
        // Deleting what does not exist refuses the user's whole change, before any write.
        match scram_credentials::read(&self.zk, user) {
            Ok(have) if c.delete.iter().any(|m| !have.contains_key(m)) => {
                return refuse(
                    ErrorCode::ResourceNotFound,
                    "Attempt to delete a user credential that does not exist".into(),
                );
            }
            Ok(_) => {}
            Err(e) => return refuse(ErrorCode::UnknownServerError, format!("ZooKeeper: {e:?}")),
        }
        let written = scram_credentials::alter(&self.zk, user, &c.set, &c.delete)
            .and_then(|_| scram_credentials::read(&self.zk, user));
        match written {
            Ok(now) => {
                log::info!(
                    "[Broker {}] SCRAM credentials of user {user} changed: now {:?}",
                    self.broker_id,
                    now.keys().map(|m| m.name()).collect::<Vec<_>>()
                );
                self.credentials.put_user(user, now);
                (user.to_owned(), 0, None)
            }
            Err(e) => refuse(ErrorCode::UnknownServerError, format!("ZooKeeper: {e:?}")),
        }
    }
}
