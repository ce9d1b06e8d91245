//! TLS with rustls (ring), blocking: a listener's `ServerConfig` and a broker's
//! `ClientConfig` built from Kafka's settings (`security::tls::TlsSettings`: PEM files or
//! inline PEM, an encrypted PKCS#8 key decrypted with `ssl.key.password`), and the server
//! handshake with a deadline, so a client that starts one and stops holds its connection's
//! thread for `HANDSHAKE_DEADLINE` at most and no one else's.

use std::io;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{
    ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, ServerConnection,
    SignatureScheme, StreamOwned, SupportedProtocolVersion,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use super::transport::Transport;
use crate::security::Principal;
use parking_lot::RwLock;

use crate::security::tls::{ClientAuth, Pem, TlsSettings, subject_alt_names, subject_name};

/// How long a client has to complete its TLS handshake.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);

fn pem_text(p: &Pem, what: &str) -> Result<String, String> {
    match p {
        Pem::File(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the {what} {}: {e}", path.display())),
        Pem::Inline(t) => Ok(t.clone()),
    }
}

fn certificates(p: &Pem, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let text = pem_text(p, what)?;
    let certs = CertificateDer::pem_slice_iter(text.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the {what} {p:?} holds malformed PEM: {e}"))?;
    if certs.is_empty() {
        return Err(format!("the {what} {p:?} holds no certificate"));
    }
    Ok(certs)
}

const ENCRYPTED_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
const ENCRYPTED_END: &str = "-----END ENCRYPTED PRIVATE KEY-----";

/// The private key of a keystore: PKCS#8 (as KIP-651 wants), encrypted with `password` or
/// not; PKCS#1 and SEC1 keys are read too.
fn private_key(p: &Pem, password: Option<&str>) -> Result<PrivateKeyDer<'static>, String> {
    let text = pem_text(p, "keystore")?;
    if let Some(start) = text.find(ENCRYPTED_BEGIN) {
        let end = text[start..]
            .find(ENCRYPTED_END)
            .ok_or("the keystore's encrypted key has no end line")?
            + start
            + ENCRYPTED_END.len();
        let password = password.ok_or(
            "the keystore's private key is encrypted: set `ssl.key.password` to decrypt it",
        )?;
        let (_, der) = pkcs8::der::pem::decode_vec(&text.as_bytes()[start..end])
            .map_err(|e| format!("the keystore's encrypted key is malformed: {e}"))?;
        let info = pkcs8::EncryptedPrivateKeyInfoRef::try_from(der.as_slice())
            .map_err(|e| format!("the keystore's encrypted key is malformed: {e}"))?;
        let plain = info
            .decrypt(password)
            .map_err(|_| "cannot decrypt the keystore's private key with `ssl.key.password`")?;
        return Ok(PrivateKeyDer::Pkcs8(plain.as_bytes().to_vec().into()));
    }
    PrivateKeyDer::from_pem_slice(text.as_bytes())
        .map_err(|e| format!("the keystore {p:?} holds no private key: {e}"))
}

fn provider(s: &TlsSettings) -> Result<Arc<CryptoProvider>, String> {
    let mut p = rustls::crypto::ring::default_provider();
    if !s.cipher_suites.is_empty() {
        let all = p.cipher_suites.clone();
        p.cipher_suites = Vec::new();
        for name in &s.cipher_suites {
            // rustls writes TLS 1.3's suites `TLS13_…`; Java and IANA write them `TLS_…`.
            let found = all.iter().find(|c| {
                let n = format!("{:?}", c.suite());
                n == *name || n.replacen("TLS13_", "TLS_", 1) == *name
            });
            match found {
                Some(c) => p.cipher_suites.push(*c),
                None => {
                    let known: Vec<String> = all
                        .iter()
                        .map(|c| format!("{:?}", c.suite()).replacen("TLS13_", "TLS_", 1))
                        .collect();
                    return Err(format!(
                        "`ssl.cipher.suites` names {name}, which is not served (served: {})",
                        known.join(", ")
                    ));
                }
            }
        }
    }
    Ok(Arc::new(p))
}

fn versions(s: &TlsSettings) -> Vec<&'static SupportedProtocolVersion> {
    let mut v = Vec::new();
    if s.protocols.iter().any(|p| p == "TLSv1.3") {
        v.push(&rustls::version::TLS13);
    }
    if s.protocols.iter().any(|p| p == "TLSv1.2") {
        v.push(&rustls::version::TLS12);
    }
    v
}

fn roots(trust: &Pem) -> Result<Arc<RootCertStore>, String> {
    let mut roots = RootCertStore::empty();
    for c in certificates(trust, "truststore")? {
        roots.add(c).map_err(|e| {
            format!("the truststore {trust:?} holds a certificate rustls refuses: {e}")
        })?;
    }
    Ok(Arc::new(roots))
}

/// A listener's server side.
pub fn server_config(s: &TlsSettings) -> Result<Arc<ServerConfig>, String> {
    let provider = provider(s)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions(s))
        .map_err(|e| format!("the TLS settings do not fit together: {e}"))?;
    let builder = match (&s.trust, s.client_auth) {
        (Some(trust), auth) if auth != ClientAuth::None => {
            let v = WebPkiClientVerifier::builder_with_provider(roots(trust)?, provider);
            let v = if auth == ClientAuth::Requested {
                v.allow_unauthenticated()
            } else {
                v
            };
            builder.with_client_cert_verifier(
                v.build()
                    .map_err(|e| format!("cannot check client certificates: {e}"))?,
            )
        }
        _ => builder.with_no_client_auth(),
    };
    let key = s.key.as_ref().ok_or("no keystore")?;
    let chain = certificates(s.chain.as_ref().ok_or("no certificate chain")?, "keystore")?;
    let config = builder
        .with_single_cert(chain, private_key(key, s.key_password.as_deref())?)
        .map_err(|e| format!("the keystore's key and certificate do not go together: {e}"))?;
    Ok(Arc::new(config))
}

/// The client side a broker dials another's TLS inter-broker listener with: it trusts the
/// truststore, presents its own certificate, and checks the name it dialed unless
/// `ssl.endpoint.identification.algorithm` is empty.
pub fn client_config(s: &TlsSettings) -> Result<Arc<ClientConfig>, String> {
    let provider = provider(s)?;
    let trust = s.trust.as_ref().ok_or(
        "the inter-broker listener is TLS: set `ssl.truststore.location` so that brokers can check each other's certificates",
    )?;
    let roots = roots(trust)?;
    let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .map_err(|e| format!("cannot check server certificates: {e}"))?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions(s))
        .map_err(|e| format!("the TLS settings do not fit together: {e}"))?;
    let builder = if s.verify_hostname {
        builder.with_webpki_verifier(webpki)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyName(webpki)))
    };
    let config = match (&s.key, &s.chain) {
        (Some(key), Some(chain)) => builder
            .with_client_auth_cert(
                certificates(chain, "keystore")?,
                private_key(key, s.key_password.as_deref())?,
            )
            .map_err(|e| format!("the keystore's key and certificate do not go together: {e}"))?,
        _ => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// Checks the chain as WebPKI does, but not that the certificate names the host dialed
/// (`ssl.endpoint.identification.algorithm=`, empty).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// A TLS listener's acceptor: its configuration, swapped whole when the listener's keystore
/// or truststore changes while the broker runs (KIP-226), so new connections get the new
/// certificate and open ones keep the one they started with.
pub struct TlsAcceptor {
    listener: String,
    served: RwLock<Arc<Served>>,
}

/// What a listener serves, with what it was built from.
struct Served {
    settings: TlsSettings,
    /// A digest of the PEM files' text, so a keystore rewritten in place is read again.
    files: Vec<u8>,
    /// The leaf certificate's subject and subject alternative names.
    names: (String, Vec<String>),
    config: Arc<ServerConfig>,
}

impl std::fmt::Debug for TlsAcceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TlsAcceptor({})", self.listener)
    }
}

/// A digest of the text of every file `s` names.
fn files_digest(s: &TlsSettings) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in [&s.key, &s.chain, &s.trust].into_iter().flatten() {
        if let Pem::File(path) = p {
            h.update(std::fs::read(path).unwrap_or_default());
            h.update([0]);
        }
    }
    h.finalize().to_vec()
}

fn build(s: &TlsSettings) -> Result<Served, String> {
    let chain = certificates(s.chain.as_ref().ok_or("no certificate chain")?, "keystore")?;
    let names = (subject_name(&chain[0])?, subject_alt_names(&chain[0])?);
    Ok(Served {
        settings: s.clone(),
        files: files_digest(s),
        names,
        config: server_config(s)?,
    })
}

impl TlsAcceptor {
    pub fn new(listener: &str, s: &TlsSettings) -> Result<TlsAcceptor, String> {
        Ok(TlsAcceptor {
            listener: listener.to_owned(),
            served: RwLock::new(Arc::new(build(s)?)),
        })
    }

    /// What the listener would serve with `new`, when that differs from what it serves —
    /// settings or the files' text — and may replace it: a keystore that loads, whose
    /// certificate names itself as the served one does unless `ssl.allow.dn.changes` /
    /// `ssl.allow.san.changes` say otherwise (Kafka's check, so that a certificate for
    /// another host is not put on a listener by mistake).
    fn replacement(&self, new: &TlsSettings) -> Result<Option<Served>, String> {
        let now = self.served.read().clone();
        if now.settings == *new && now.files == files_digest(new) {
            return Ok(None);
        }
        let l = &self.listener;
        let next = build(new).map_err(|e| format!("listener {l}: {e}"))?;
        let ((dn, san), (new_dn, new_san)) = (&now.names, &next.names);
        if dn != new_dn && !new.allow_dn_changes {
            return Err(format!(
                "listener {l}: Keystore DistinguishedName does not match: existing={{DN={dn}}}, new={{DN={new_dn}}} (set `ssl.allow.dn.changes` to allow it)"
            ));
        }
        if san != new_san && !new.allow_san_changes {
            return Err(format!(
                "listener {l}: Keystore SubjectAltNames do not match: existing={{SAN={san:?}}}, new={{SAN={new_san:?}}} (set `ssl.allow.san.changes` to allow it)"
            ));
        }
        Ok(Some(next))
    }

    /// Whether the listener may take `new`: the check of a change before it is stored.
    pub fn check(&self, new: &TlsSettings) -> Result<(), String> {
        self.replacement(new).map(|_| ())
    }

    /// Serves `new` to the connections accepted from now on, when it differs from what is
    /// served and passes `check`; a refusal keeps the served configuration, logged.
    pub fn reconfigure(&self, new: &TlsSettings) {
        match self.replacement(new) {
            Ok(None) => {}
            Ok(Some(next)) => {
                log::info!(
                    "listener {}: new TLS keystore/truststore served to new connections (certificate {})",
                    self.listener,
                    next.names.0
                );
                *self.served.write() = Arc::new(next);
            }
            Err(e) => log::error!("{e}; the listener keeps its current certificate"),
        }
    }

    /// Completes the server side of a handshake within `HANDSHAKE_DEADLINE`: the connection,
    /// and the principal its client certificate names (`None` without one). The error says
    /// why the handshake failed, for the log.
    pub fn accept(&self, sock: TcpStream) -> Result<(Transport, Option<Principal>), String> {
        let mut first = [0u8; 1];
        sock.set_read_timeout(Some(HANDSHAKE_DEADLINE))
            .map_err(|e| e.to_string())?;
        match sock.peek(&mut first) {
            Ok(0) => return Err("closed before a TLS handshake".into()),
            // A TLS record of type handshake starts with 22; a Kafka request with a size.
            Ok(_) if first[0] != 22 => {
                return Err("not a TLS handshake (a plaintext client on a TLS listener?)".into());
            }
            Ok(_) => {}
            Err(e) => {
                return Err(format!(
                    "no TLS handshake within {HANDSHAKE_DEADLINE:?}: {e}"
                ));
            }
        }
        let served = self.served.read().clone();
        let mut conn = ServerConnection::new(served.config.clone()).map_err(|e| e.to_string())?;
        let mut sock = sock;
        let started = Instant::now();
        while conn.is_handshaking() {
            let left = HANDSHAKE_DEADLINE.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(format!(
                    "TLS handshake not finished within {HANDSHAKE_DEADLINE:?}"
                ));
            }
            sock.set_read_timeout(Some(left))
                .map_err(|e| e.to_string())?;
            if let Err(e) = conn.complete_io(&mut sock) {
                // Send the alert that says why, if rustls has one queued.
                let _ = conn.write_tls(&mut sock);
                return Err(describe(&e));
            }
        }
        let principal = match conn.peer_certificates().and_then(|c| c.first()) {
            Some(cert) => Some(Principal::user(
                &served.settings.principal_rules.apply(&subject_name(cert)?),
            )),
            None => None,
        };
        Ok((
            Transport::Tls(Box::new(StreamOwned::new(conn, sock))),
            principal,
        ))
    }
}

fn describe(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("TLS handshake not finished within {HANDSHAKE_DEADLINE:?}")
        }
        io::ErrorKind::UnexpectedEof => "the client closed during the TLS handshake".into(),
        _ => format!("TLS handshake failed: {e}"),
    }
}
