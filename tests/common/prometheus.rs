//! Scraping `GET /metrics` and reading the Prometheus text format strictly: a test that
//! parses with this fails on any line Prometheus itself would refuse.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// One series: the metric name and its labels, sorted.
pub type Series = (String, Vec<(String, String)>);

#[derive(Debug, Default, Clone)]
pub struct Scrape {
    pub types: BTreeMap<String, String>,
    pub samples: BTreeMap<Series, f64>,
}

/// An HTTP GET of `path`: (status code, content type, body).
pub fn http_get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_default();
    Ok((status, content_type, body.to_owned()))
}

/// Scrapes `/metrics` at `addr` and parses it, panicking on anything malformed.
pub fn scrape(addr: SocketAddr) -> Scrape {
    let (status, content_type, body) = http_get(addr, "/metrics").expect("scrape");
    assert_eq!(status, 200, "{body}");
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "content type {content_type}"
    );
    parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"))
}

fn valid_name(n: &str, colons: bool) -> bool {
    let mut chars = n.chars();
    let ok = |c: char| c.is_ascii_alphabetic() || c == '_' || (colons && c == ':');
    chars.next().is_some_and(ok) && chars.all(|c| ok(c) || c.is_ascii_digit())
}

/// The family a sample line belongs to: its own name, or a summary's or histogram's base.
fn family_of<'a>(name: &'a str, types: &BTreeMap<String, String>) -> Option<&'a str> {
    if types.contains_key(name) {
        return Some(name);
    }
    for suffix in ["_count", "_sum", "_bucket"] {
        if let Some(base) = name.strip_suffix(suffix)
            && types
                .get(base)
                .is_some_and(|t| t == "summary" || t == "histogram")
        {
            return Some(base);
        }
    }
    None
}

/// Parses the text format; every sample must follow its family's `# TYPE`.
pub fn parse(text: &str) -> Result<Scrape, String> {
    let mut out = Scrape::default();
    for (n, line) in text.lines().enumerate() {
        let at = |what: &str| format!("line {}: {what}: {line}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("HELP"), Some(name), _) if valid_name(name, true) => {}
                (Some("TYPE"), Some(name), Some(t)) if valid_name(name, true) => {
                    if !["counter", "gauge", "summary", "histogram", "untyped"].contains(&t) {
                        return Err(at("unknown type"));
                    }
                    if out.types.insert(name.to_owned(), t.to_owned()).is_some() {
                        return Err(at("second TYPE line"));
                    }
                }
                _ => return Err(at("bad comment line")),
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').ok_or_else(|| at("no value"))?;
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().map_err(|_| at("bad value"))?,
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, Vec::new()),
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .ok_or_else(|| at("unclosed labels"))?;
                (name, parse_labels(body).map_err(|e| at(&e))?)
            }
        };
        if !valid_name(name, true) {
            return Err(at("bad metric name"));
        }
        let family = family_of(name, &out.types).ok_or_else(|| at("sample before its TYPE"))?;
        if out.types[family] == "counter" && value < 0.0 {
            return Err(at("negative counter"));
        }
        let mut labels = labels;
        labels.sort();
        if out
            .samples
            .insert((name.to_owned(), labels), value)
            .is_some()
        {
            return Err(at("series given twice"));
        }
    }
    Ok(out)
}

fn parse_labels(body: &str) -> Result<Vec<(String, String)>, String> {
    let mut labels = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"").ok_or("label without =\"")?;
        if !valid_name(name, false) {
            return Err(format!("bad label name `{name}`"));
        }
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c @ ('\\' | '"'))) => value.push(c),
                    _ => return Err("bad escape".into()),
                },
                Some((_, c)) => value.push(c),
                None => return Err("unterminated label value".into()),
            }
        };
        labels.push((name.to_owned(), value));
        rest = &after[end + 1..];
        rest = match rest.strip_prefix(',') {
            Some(r) => r,
            None if rest.is_empty() => rest,
            None => return Err("labels not separated by ,".into()),
        };
    }
    Ok(labels)
}

impl Scrape {
    /// The value of the series `name` with exactly `labels`.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut l: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        l.sort();
        self.samples.get(&(name.to_owned(), l)).copied()
    }

    /// Every series of `name`.
    pub fn all(&self, name: &str) -> Vec<(&[(String, String)], f64)> {
        self.samples
            .iter()
            .filter(|((n, _), _)| n == name)
            .map(|((_, l), v)| (l.as_slice(), *v))
            .collect()
    }

    /// Names of every counter series that went down from `earlier` to this scrape.
    pub fn counters_that_fell(&self, earlier: &Scrape) -> Vec<String> {
        earlier
            .samples
            .iter()
            .filter(|((name, _), _)| {
                family_of(name, &earlier.types).is_some_and(|f| earlier.types[f] == "counter")
            })
            .filter(|(series, before)| self.samples.get(*series).is_some_and(|now| now < *before))
            .map(|((name, labels), _)| format!("{name}{labels:?}"))
            .collect()
    }
}
