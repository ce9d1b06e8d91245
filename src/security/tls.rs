//! TLS as Kafka configures it, without I/O: a listener's settings in Kafka's terms (PEM
//! keystore and truststore, KIP-651; `ssl.client.auth`; protocols and cipher suites), and the
//! principal of a client certificate — its subject's distinguished name as Java's
//! `X500Principal.getName()` writes it (RFC 2253), mapped by `ssl.principal.mapping.rules`
//! (`DEFAULT`, and `RULE:pattern/replacement/[LU]`).

use std::path::PathBuf;

use regex::Regex;

/// Whether a TLS listener asks clients for a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    #[default]
    None,
    /// Asked for; a client without one is still served (as `User:ANONYMOUS`).
    Requested,
    Required,
}

/// Where PEM text comes from: a file, or the text itself (Kafka's inline keys).
#[derive(Clone, PartialEq, Eq)]
pub enum Pem {
    File(PathBuf),
    Inline(String),
}

impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pem::File(p) => write!(f, "{}", p.display()),
            // Inline text may hold a private key.
            Pem::Inline(_) => write!(f, "(inline PEM)"),
        }
    }
}

/// One side's TLS settings (a listener's, or the broker's as a client of others).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct TlsSettings {
    /// The private key (PKCS#8, possibly encrypted) and the certificate chain: one file
    /// holding both (`ssl.keystore.location`), or each inline.
    pub key: Option<Pem>,
    pub chain: Option<Pem>,
    /// `ssl.key.password`: decrypts an encrypted key.
    pub key_password: Option<String>,
    /// The certificates trusted to sign the other side's (`ssl.truststore.*`).
    pub trust: Option<Pem>,
    pub client_auth: ClientAuth,
    /// `TLSv1.2`, `TLSv1.3`.
    pub protocols: Vec<String>,
    /// IANA names (`TLS_AES_128_GCM_SHA256`); empty for rustls' defaults.
    pub cipher_suites: Vec<String>,
    /// `ssl.endpoint.identification.algorithm=https`: a client checks the server's name.
    pub verify_hostname: bool,
    pub principal_rules: PrincipalRules,
    /// `ssl.allow.dn.changes` / `ssl.allow.san.changes`: whether a keystore changed while the
    /// broker runs may name itself differently from the one it replaces.
    pub allow_dn_changes: bool,
    pub allow_san_changes: bool,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("key", &self.key)
            .field("chain", &self.chain)
            .field("trust", &self.trust)
            .field("client_auth", &self.client_auth)
            .field("protocols", &self.protocols)
            .finish_non_exhaustive()
    }
}

/// `ssl.principal.mapping.rules`, in order; the first that matches names the principal.
#[derive(Debug, Clone, Default)]
pub struct PrincipalRules(Vec<Rule>);

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Replace {
        pattern: Regex,
        replacement: String,
        case: Option<char>,
    },
}

impl PartialEq for PrincipalRules {
    fn eq(&self, other: &Self) -> bool {
        format!("{self:?}") == format!("{other:?}")
    }
}

impl Eq for PrincipalRules {}

/// The text up to the next unescaped `/`, unescaped, and what follows it.
fn until_slash(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, '/')) => out.push('/'),
                Some((_, o)) => {
                    out.push('\\');
                    out.push(o);
                }
                None => out.push('\\'),
            },
            '/' => return Some((out, &s[i + 1..])),
            c => out.push(c),
        }
    }
    None
}

impl PrincipalRules {
    pub fn parse(text: &str) -> Result<PrincipalRules, String> {
        let key = "ssl.principal.mapping.rules";
        let mut rules = Vec::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix("DEFAULT") {
                rules.push(Rule::Default);
                rest = r;
            } else if let Some(r) = rest.strip_prefix("RULE:") {
                let bad = || format!("`{key}`: a rule is RULE:pattern/replacement/[LU]");
                let (pattern, r) = until_slash(r).ok_or_else(bad)?;
                let (replacement, mut r) = until_slash(r).ok_or_else(bad)?;
                let case = match r.chars().next() {
                    Some(c @ ('L' | 'U')) => {
                        r = &r[1..];
                        Some(c)
                    }
                    _ => None,
                };
                let pattern = Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| format!("`{key}`: bad pattern: {e}"))?;
                rules.push(Rule::Replace {
                    pattern,
                    replacement,
                    case,
                });
                rest = r;
            } else {
                return Err(format!("`{key}`: expected DEFAULT or RULE:… at `{rest}`"));
            }
            rest = rest.trim_start();
            if let Some(r) = rest.strip_prefix(',') {
                rest = r.trim_start();
            } else if !rest.is_empty() {
                return Err(format!("`{key}`: expected `,` at `{rest}`"));
            }
        }
        if rules.is_empty() {
            rules.push(Rule::Default);
        }
        Ok(PrincipalRules(rules))
    }

    /// The principal name of a distinguished name: the first rule that matches (DEFAULT
    /// always does, with the name itself); the name itself when none does.
    pub fn apply(&self, dn: &str) -> String {
        for r in &self.0 {
            match r {
                Rule::Default => return dn.to_owned(),
                Rule::Replace {
                    pattern,
                    replacement,
                    case,
                } => {
                    if pattern.is_match(dn) {
                        let out = pattern.replace(dn, replacement.as_str()).into_owned();
                        return match case {
                            Some('L') => out.to_lowercase(),
                            Some('U') => out.to_uppercase(),
                            _ => out,
                        };
                    }
                }
            }
        }
        dn.to_owned()
    }
}

/// RFC 2253's short names of the attribute types Java names.
fn attribute_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "STREET",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "0.9.2342.19200300.100.1.1" => "UID",
        "0.9.2342.19200300.100.1.25" => "DC",
        _ => return None,
    })
}

/// RFC 2253's escaping of an attribute value.
fn escape_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The subject of a DER certificate as `X500Principal.getName()` writes it: the RDNs last
/// first, `CN=alice,OU=eng,O=acme`.
pub fn subject_name(cert_der: &[u8]) -> Result<String, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der)
        .map_err(|e| format!("unreadable client certificate: {e}"))?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter_rdn() {
        let parts: Vec<String> = rdn
            .iter()
            .map(|a| {
                let oid = a.attr_type().to_id_string();
                let value = a.as_str().map(escape_value).unwrap_or_else(|_| {
                    let hex: String = a.as_slice().iter().map(|b| format!("{b:02x}")).collect();
                    format!("#{hex}")
                });
                format!("{}={value}", attribute_name(&oid).unwrap_or(&oid))
            })
            .collect();
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

/// The subject alternative names of a DER certificate, sorted, each as `DNS:name`,
/// `IP:address` and so on: what a replacement certificate must keep (Kafka's check on a
/// keystore changed while the broker runs).
pub fn subject_alt_names(cert_der: &[u8]) -> Result<Vec<String>, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der)
        .map_err(|e| format!("unreadable certificate: {e}"))?;
    let mut names: Vec<String> = match cert.subject_alternative_name() {
        Ok(Some(ext)) => ext
            .value
            .general_names
            .iter()
            .map(|n| format!("{n}"))
            .collect(),
        Ok(None) => Vec::new(),
        Err(e) => return Err(format!("unreadable subject alternative names: {e}")),
    };
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_mapping_rules() {
        let dn = "CN=alice,OU=eng,O=acme";
        assert_eq!(PrincipalRules::parse("DEFAULT").unwrap().apply(dn), dn);
        let r = PrincipalRules::parse("RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/U, DEFAULT").unwrap();
        assert_eq!(r.apply(dn), "ALICE@ENG");
        assert_eq!(r.apply("CN=bob"), "CN=bob");
        let r = PrincipalRules::parse("RULE:^CN=([^,]*).*$/$1/L").unwrap();
        assert_eq!(r.apply("CN=Carol,O=x"), "carol");
        let r = PrincipalRules::parse(r"RULE:^CN=(.*)$/a\/$1/").unwrap();
        assert_eq!(r.apply("CN=d"), "a/d");
        for bad in ["NOPE", "RULE:x", "RULE:(/x/", "DEFAULT DEFAULT"] {
            assert!(PrincipalRules::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_are_escaped_as_rfc2253_says() {
        assert_eq!(escape_value("a,b+c"), r"a\,b\+c");
        assert_eq!(escape_value(" #x "), r"\ #x\ ");
    }
}
