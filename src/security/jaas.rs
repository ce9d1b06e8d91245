//! Kafka's JAAS configuration text, as `sasl.jaas.config` holds it:
//!
//! ```text
//! org.apache.kafka.common.security.plain.PlainLoginModule required
//!     username="admin" password="admin-secret" user_alice="alice-secret";
//! ```
//!
//! A login module's class, its control flag, `key=value` options (a value quoted or a bare
//! word), and a closing `;`. Errors name what is wrong and never a value: the options are
//! passwords.

use std::collections::BTreeMap;

/// One login module's entry.
#[derive(Clone, PartialEq, Eq)]
pub struct JaasConfig {
    pub module: String,
    pub options: BTreeMap<String, String>,
}

impl std::fmt::Debug for JaasConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The options' names only: their values are secrets.
        write!(
            f,
            "JaasConfig({} {:?})",
            self.module,
            self.options.keys().collect::<Vec<_>>()
        )
    }
}

pub const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
pub const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

const FLAGS: [&str; 4] = ["required", "requisite", "sufficient", "optional"];

/// Splits the text into words, quoted strings (kept with a marker so `"a"` is not `a=`'s
/// key), `=` and `;`.
fn tokens(text: &str) -> Result<Vec<(bool, String)>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '=' || c == ';' {
            out.push((false, c.to_string()));
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => s.extend(chars.next()),
                    Some(c) => s.push(c),
                    None => return Err("an unterminated quoted value".into()),
                }
            }
            out.push((true, s));
        } else {
            let mut s = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == '=' || c == ';' || c == '"' {
                    break;
                }
                s.push(c);
                chars.next();
            }
            out.push((false, s));
        }
    }
    Ok(out)
}

/// Reads one login module's entry; `key` names the configuration key in errors.
pub fn parse(key: &str, text: &str) -> Result<JaasConfig, String> {
    let toks = tokens(text).map_err(|e| format!("`{key}`: {e}"))?;
    let mut it = toks.into_iter();
    let module = match it.next() {
        Some((false, m)) if m != "=" && m != ";" => m,
        _ => {
            return Err(format!(
                "`{key}` does not start with a login module's class"
            ));
        }
    };
    match it.next() {
        Some((false, f)) if FLAGS.contains(&f.to_lowercase().as_str()) => {}
        _ => {
            return Err(format!(
                "`{key}`: the login module's class is not followed by a control flag ({})",
                FLAGS.join(", ")
            ));
        }
    }
    let mut options = BTreeMap::new();
    loop {
        match it.next() {
            Some((false, s)) if s == ";" => break,
            Some((_, name)) if name != "=" => {
                if it.next().map(|(q, t)| !q && t == "=") != Some(true) {
                    return Err(format!("`{key}`: option {name} is not followed by `=`"));
                }
                let Some((_, value)) = it.next() else {
                    return Err(format!("`{key}`: option {name} has no value"));
                };
                options.insert(name, value);
            }
            _ => return Err(format!("`{key}` does not end with `;`")),
        }
    }
    if it.next().is_some() {
        return Err(format!(
            "`{key}` holds more than one login module; gregor reads one"
        ));
    }
    Ok(JaasConfig { module, options })
}

impl JaasConfig {
    /// The `user_<name>="<password>"` options: PLAIN's users.
    pub fn plain_users(&self) -> BTreeMap<String, String> {
        self.options
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("user_").map(|u| (u.to_owned(), v.clone())))
            .collect()
    }

    /// The `username` and `password` options: the login this side uses as a client.
    pub fn login(&self) -> Option<(String, String)> {
        Some((
            self.options.get("username")?.clone(),
            self.options.get("password")?.clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kafkas_plain_entry() {
        let c = parse(
            "k",
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required
               username="admin" password="admin-secret"
               user_admin="admin-secret" user_alice=alice-secret;"#,
        )
        .unwrap();
        assert_eq!(c.module, PLAIN_MODULE);
        assert_eq!(c.login().unwrap(), ("admin".into(), "admin-secret".into()));
        let users = c.plain_users();
        assert_eq!(users["alice"], "alice-secret");
        assert_eq!(users.len(), 2);
        assert!(!format!("{c:?}").contains("secret"));
        let s = parse("k", &format!("{SCRAM_MODULE} required;")).unwrap();
        assert!(s.options.is_empty());
    }

    #[test]
    fn malformed_entries_are_refused_without_their_values() {
        for text in [
            "",
            "Module",
            "Module maybe;",
            "Module required a=\"x\"",
            "Module required a \"secret\";",
            "Module required a=\"secret;",
            "Module required; Other required;",
        ] {
            let e = parse("sasl.jaas.config", text).unwrap_err();
            assert!(e.contains("sasl.jaas.config"), "{e}");
            assert!(!e.contains("secret"), "{e}");
        }
    }
}
