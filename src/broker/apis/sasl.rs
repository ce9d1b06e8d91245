//! Authentication on a SASL listener (KIP-43, KIP-152): until a connection has
//! authenticated, only ApiVersions, SaslHandshake and SaslAuthenticate are served; anything
//! else closes it, as Kafka's `SaslServerAuthenticator` does. A handshake naming a mechanism
//! the listener does not enable, and a failed exchange, are answered with the error and a
//! message, and the connection is closed. After a v0 handshake the mechanism's tokens come
//! bare (size-prefixed, no request header), as 0.10 clients send them.
//!
//! Once authenticated — or on a listener without SASL — SaslHandshake and SaslAuthenticate
//! are answered ILLEGAL_SASL_STATE.

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
        let listener = self.config.security.listener(&conn.listener)?;
        Some(match self.step(exchange, frame, conn, listener) {
            Ok(token) => {
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
        let Some(listener) = self.config.security.listener(&conn.listener) else {
            return Action::Close;
        };
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
                Vec::new(),
            );
            return Action::RespondAndClose;
        };
        let mech = exchange.mechanism();
        match self.step(exchange, req.auth_bytes, cx.conn, listener) {
            Ok(token) => {
                answer_authenticate(cx, out, ErrorCode::None, None, token);
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
                    Vec::new(),
                );
                Action::RespondAndClose
            }
        }
    }

    /// One step of the exchange: the token to send back, the connection's principal set
    /// when it completes, every outcome counted and every failure logged with its reason.
    fn step(
        &self,
        exchange: &mut ServerExchange,
        token: &[u8],
        conn: &ConnectionContext,
        listener: &SaslListener,
    ) -> Result<Vec<u8>, Refused> {
        let mech = exchange.mechanism();
        match exchange.step(token, &self.credentials.for_listener(listener)) {
            Ok(Step::Challenge(t)) => Ok(t),
            Ok(Step::Done { token, user }) => {
                log::debug!(
                    "[Broker {}] {} authenticated as User:{user} with {} on listener {}",
                    self.broker_id,
                    conn.who(),
                    mech.name(),
                    conn.listener
                );
                conn.authenticated(Principal::user(&user));
                self.credentials.count(&conn.listener, mech, true);
                Ok(token)
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

    /// SaslHandshake or SaslAuthenticate once authenticated, or on a listener without SASL.
    pub(super) fn sasl_out_of_turn(&self, cx: &RequestContext<'_>, out: &mut Response) -> Action {
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
                    "the connection is already authenticated (re-authentication is not served)"
                        .into(),
                ),
                Vec::new(),
            );
        }
        Action::Respond
    }
}

fn answer_authenticate(
    cx: &RequestContext<'_>,
    out: &mut Response,
    error: ErrorCode,
    message: Option<String>,
    token: Vec<u8>,
) {
    cx.answer(
        out,
        &SaslAuthenticateResponse {
            error_code: error as i16,
            error_message: message,
            auth_bytes: token,
            session_lifetime_ms: 0,
        },
    );
}
