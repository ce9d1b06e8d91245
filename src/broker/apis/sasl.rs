//! Authentication on a SASL listener (KIP-43, KIP-152): until a connection has
//! authenticated, only ApiVersions, SaslHandshake and SaslAuthenticate are served; anything
//! else closes it, as Kafka's `SaslServerAuthenticator` does. A handshake naming a mechanism
//! the listener does not enable, and a failed exchange, are answered with the error and a
//! message, and the connection is closed. After a v0 handshake the mechanism's tokens come
//! bare (size-prefixed, no request header), as 0.10 clients send them.
//!
//! With `connections.max.reauth.ms` (KIP-368) a login lasts that long: SaslAuthenticate v1+
//! tells the client so, the client authenticates again on the same connection (a new
//! SaslHandshake v1 and exchange, as the same user), and a connection whose session ran out
//! is closed at its next request. Otherwise — and on a listener without SASL — SaslHandshake
//! and SaslAuthenticate after authentication are answered ILLEGAL_SASL_STATE.

use super::{KafkaApis, RequestContext};
use crate::config::security::SaslListener;
use crate::network::{Action, ConnectionContext, Response};
use crate::protocol::sasl::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use crate::protocol::{ErrorCode, header};
use crate::security::{Mechanism, Principal, Refused, SaslSession, ServerExchange, Step};

impl KafkaApis {
    /// A bare token after a v0 handshake, if the connection is in that state.
    pub(super) fn raw_sasl_token(
        &self,
        frame: &[u8],
        out: &mut Response,
        conn: &ConnectionContext,
    ) -> Option<Action> {
        let mut session = conn.sasl.lock();
        let SaslSession::Exchanging {
            exchange,
            raw: true,
        } = &mut *session
        else {
            return None;
        };
        // The configuration running now: a listener's JAAS entry may change while it runs.
        let listener = self
            .dynamic
            .current()
            .security
            .listener(&conn.listener)?
            .clone();
        Some(match self.step(exchange, frame, conn, &listener) {
            Ok((token, _)) => {
                out.extend_from_slice(&token);
                Action::Respond
            }
            // A v0 client has no error answer to read: the connection is closed.
            Err(_) => Action::Close,
        })
    }

    /// A request on a SASL connection that has not authenticated yet (its header read).
    pub(super) fn before_authentication(
        &self,
        body: &[u8],
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let conn = cx.conn;
        let Some(listener) = self
            .dynamic
            .current()
            .security
            .listener(&conn.listener)
            .cloned()
        else {
            return Action::Close;
        };
        let listener = &*listener;
        let answer = match cx.api_key {
            header::SASL_HANDSHAKE => cx
                .read::<SaslHandshakeRequest>(body)
                .map(|req| self.sasl_handshake(&req, cx, out, listener)),
            header::SASL_AUTHENTICATE => cx
                .read::<SaslAuthenticateRequest>(body)
                .map(|req| self.sasl_authenticate(&req, cx, out, listener)),
            key => {
                log::warn!(
                    "[Broker {}] closing connection from {} on SASL listener {}: {} request before authenticating",
                    self.broker_id,
                    conn.who(),
                    conn.listener,
                    header::api_name(key).unwrap_or("unknown")
                );
                return Action::Close;
            }
        };
        answer.unwrap_or_else(|e| {
            log::warn!(
                "[Broker {}] closing connection from {}: malformed SASL request: {e}",
                self.broker_id,
                conn.who()
            );
            Action::Close
        })
    }

    fn sasl_handshake(
        &self,
        req: &SaslHandshakeRequest,
        cx: &RequestContext<'_>,
        out: &mut Response,
        listener: &SaslListener,
    ) -> Action {
        let mechanisms: Vec<String> = listener
            .mechanisms
            .iter()
            .map(|m| m.name().to_owned())
            .collect();
        let mut session = cx.conn.sasl.lock();
        let chosen =
            Mechanism::from_name(&req.mechanism).filter(|m| listener.mechanisms.contains(m));
        let error = match (&*session, chosen) {
            (SaslSession::AwaitHandshake, Some(m)) => {
                *session = SaslSession::Exchanging {
                    exchange: ServerExchange::new(m),
                    raw: cx.version == 0,
                };
                ErrorCode::None
            }
            (SaslSession::AwaitHandshake, None) => {
                log::info!(
                    "[Broker {}] closing connection from {} on listener {}: SASL mechanism {:?} is not enabled there ({})",
                    self.broker_id,
                    cx.conn.who(),
                    cx.conn.listener,
                    req.mechanism,
                    mechanisms.join(", ")
                );
                ErrorCode::UnsupportedSaslMechanism
            }
            (SaslSession::Exchanging { .. }, _) => ErrorCode::IllegalSaslState,
        };
        cx.answer(
            out,
            &SaslHandshakeResponse {
                error_code: error as i16,
                mechanisms,
            },
        );
        if error == ErrorCode::None {
            Action::Respond
        } else {
            Action::RespondAndClose
        }
    }

    fn sasl_authenticate(
        &self,
        req: &SaslAuthenticateRequest<'_>,
        cx: &RequestContext<'_>,
        out: &mut Response,
        listener: &SaslListener,
    ) -> Action {
        let mut session = cx.conn.sasl.lock();
        let SaslSession::Exchanging {
            exchange,
            raw: false,
        } = &mut *session
        else {
            answer_authenticate(
                cx,
                out,
                ErrorCode::IllegalSaslState,
                Some("SaslAuthenticate before a SaslHandshake v1".into()),
                (Vec::new(), 0),
            );
            return Action::RespondAndClose;
        };
        let mech = exchange.mechanism();
        let stepped = self.step(exchange, req.auth_bytes, cx.conn, listener);
        match stepped {
            Ok((token, done)) => {
                // A session with a lifetime (v1+ can say it) must be renewed before it ends.
                let lifetime = self.config.security.max_reauth.filter(|_| cx.version >= 1);
                if done {
                    *session = SaslSession::AwaitHandshake;
                    if let Some(d) = lifetime {
                        cx.conn.session_lasts(d);
                    }
                }
                let lifetime_ms = lifetime.map_or(0, |d| d.as_millis() as i64);
                answer_authenticate(cx, out, ErrorCode::None, None, (token, lifetime_ms));
                Action::Respond
            }
            Err(_) => {
                let message = format!(
                    "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                    mech.name()
                );
                answer_authenticate(
                    cx,
                    out,
                    ErrorCode::SaslAuthenticationFailed,
                    Some(message),
                    (Vec::new(), 0),
                );
                Action::RespondAndClose
            }
        }
    }

    /// One step of the exchange: the token to send back and whether the exchange is done,
    /// the connection's principal set when it completes (a new authentication must be as the
    /// same user), every outcome counted and every failure logged with its reason.
    fn step(
        &self,
        exchange: &mut ServerExchange,
        token: &[u8],
        conn: &ConnectionContext,
        listener: &SaslListener,
    ) -> Result<(Vec<u8>, bool), Refused> {
        let mech = exchange.mechanism();
        let stepped = exchange
            .step(token, &self.credentials.for_listener(listener))
            .and_then(|s| match (s, conn.principal()) {
                (Step::Done { user, .. }, Some(p)) if p.name != user => Err(Refused::from(
                    "authenticated again as another user than the connection's",
                )),
                (s, _) => Ok(s),
            });
        match stepped {
            Ok(Step::Challenge(t)) => Ok((t, false)),
            Ok(Step::Done { token, user }) => {
                let again = conn.principal().is_some();
                log::debug!(
                    "[Broker {}] {} {} as User:{user} with {} on listener {}",
                    self.broker_id,
                    conn.who(),
                    if again {
                        "authenticated again"
                    } else {
                        "authenticated"
                    },
                    mech.name(),
                    conn.listener
                );
                conn.authenticated(Principal::user(&user));
                self.credentials.count(&conn.listener, mech, true);
                Ok((token, true))
            }
            Err(refused) => {
                log::info!(
                    "[Broker {}] failed authentication from {} with {} on listener {}: {}",
                    self.broker_id,
                    conn.who(),
                    mech.name(),
                    conn.listener,
                    refused.reason
                );
                self.credentials.count(&conn.listener, mech, false);
                Err(refused)
            }
        }
    }

    /// SaslHandshake or SaslAuthenticate once authenticated: a new authentication (KIP-368)
    /// where logins expire, out of turn otherwise.
    pub(super) fn sasl_after_authentication(
        &self,
        body: &[u8],
        cx: &RequestContext<'_>,
        out: &mut Response,
    ) -> Action {
        let renewable = self.config.security.max_reauth.is_some()
            && cx.version >= 1
            && self.config.security.listener(&cx.conn.listener).is_some();
        if renewable {
            self.before_authentication(body, cx, out)
        } else {
            self.sasl_out_of_turn(cx, out)
        }
    }

    /// SaslHandshake or SaslAuthenticate once authenticated, or on a listener without SASL.
    fn sasl_out_of_turn(&self, cx: &RequestContext<'_>, out: &mut Response) -> Action {
        if cx.api_key == header::SASL_HANDSHAKE {
            let mechanisms = self
                .config
                .security
                .listener(&cx.conn.listener)
                .map(|l| l.mechanisms.iter().map(|m| m.name().to_owned()).collect())
                .unwrap_or_default();
            cx.answer(
                out,
                &SaslHandshakeResponse {
                    error_code: ErrorCode::IllegalSaslState as i16,
                    mechanisms,
                },
            );
        } else {
            answer_authenticate(
                cx,
                out,
                ErrorCode::IllegalSaslState,
                Some(
                    "the connection is already authenticated (authenticating again needs connections.max.reauth.ms)"
                        .into(),
                ),
                (Vec::new(), 0),
            );
        }
        Action::Respond
    }
}

/// (token, session lifetime in ms: 0 for no end).
fn answer_authenticate(
    cx: &RequestContext<'_>,
    out: &mut Response,
    error: ErrorCode,
    message: Option<String>,
    (token, session_lifetime_ms): (Vec<u8>, i64),
) {
    cx.answer(
        out,
        &SaslAuthenticateResponse {
            error_code: error as i16,
            error_message: message,
            auth_bytes: token,
            session_lifetime_ms,
        },
    );
}
