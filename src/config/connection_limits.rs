//! The socket servers' limits: `socket.request.max.bytes`, `queued.max.request.bytes`,
//! `max.connections`, `max.connections.per.ip`, `max.connections.per.ip.overrides`,
//! `max.connection.creation.rate`, `max.connection.creation.rate.per.ip` and
//! `connections.max.idle.ms` (defaults and bounds in `config::keys`).

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};

use super::{ConfigError, Props};
use crate::network::ConnectionLimits;

pub(super) fn read(p: &mut Props) -> Result<ConnectionLimits, ConfigError> {
    let queued: i64 = p.get("queued.max.request.bytes")?;
    let broker_rate: f64 = p.get("max.connection.creation.rate")?;
    let overrides = match p.take("max.connections.per.ip.overrides")? {
        Some(text) => per_ip_overrides(&text)?,
        None => HashMap::new(),
    };
    Ok(ConnectionLimits {
        socket_request_max_bytes: p.get("socket.request.max.bytes")?,
        queued_max_request_bytes: (queued > 0).then_some(queued as usize),
        max_connections: p.get("max.connections")?,
        max_connections_per_ip: p.get("max.connections.per.ip")?,
        max_connections_per_ip_overrides: overrides,
        // Kafka's default (Int.MaxValue) means unlimited.
        max_connection_creation_rate: (broker_rate < i32::MAX as f64).then_some(broker_rate),
        max_connection_creation_rate_per_ip: p.get("max.connection.creation.rate.per.ip")?,
        idle: p.millis("connections.max.idle.ms")?,
    })
}

/// `host:count,host:count` (Kafka's format); a host name stands for every address it resolves
/// to, looked up once at start.
fn per_ip_overrides(text: &str) -> Result<HashMap<IpAddr, usize>, ConfigError> {
    let key = "max.connections.per.ip.overrides";
    let mut out = HashMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (host, count) = entry
            .rsplit_once(':')
            .ok_or_else(|| ConfigError(format!("`{key}` entry `{entry}` is not host:count")))?;
        let count: usize = count
            .trim()
            .parse()
            .map_err(|_| ConfigError(format!("bad count in `{key}` entry `{entry}`")))?;
        let host = host.trim().trim_start_matches('[').trim_end_matches(']');
        let ips: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => (host, 0)
                .to_socket_addrs()
                .map_err(|e| ConfigError(format!("`{key}`: cannot resolve {host}: {e}")))?
                .map(|a| a.ip())
                .collect(),
        };
        for ip in ips {
            out.insert(ip, count);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn read_from(pairs: &[(&str, &str)]) -> Result<ConnectionLimits, ConfigError> {
        read(&mut Props::of(pairs))
    }

    #[test]
    fn kafka_formats_and_protective_defaults() {
        let d = read_from(&[]).unwrap();
        assert_eq!(
            d,
            ConnectionLimits::default(),
            "the network tests' fixture drifted"
        );
        assert!(d.max_connections_per_ip < d.max_connections);
        assert!(d.queued_max_request_bytes.is_some());
        let l = read_from(&[
            (
                "max.connections.per.ip.overrides",
                "127.0.0.2:5, localhost:7",
            ),
            ("queued.max.request.bytes", "-1"),
            ("max.connection.creation.rate", "50"),
            ("connections.max.idle.ms", "1000"),
        ])
        .unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(l.max_connections_per_ip_overrides[&ip("127.0.0.2")], 5);
        assert_eq!(l.max_connections_per_ip_overrides[&ip("127.0.0.1")], 7);
        assert_eq!(l.queued_max_request_bytes, None);
        assert_eq!(l.max_connection_creation_rate, Some(50.0));
        assert_eq!(l.idle, Duration::from_secs(1));
    }

    #[test]
    fn mistakes_are_named() {
        for (k, v) in [
            ("max.connections.per.ip.overrides", "127.0.0.2"),
            ("max.connections.per.ip.overrides", "127.0.0.2:many"),
            ("queued.max.request.bytes", "0"),
            ("max.connection.creation.rate", "-3"),
            ("max.connections.per.ip", "0"),
        ] {
            let e = read_from(&[(k, v)]).unwrap_err();
            assert!(e.0.contains(k), "{k}={v}: {e}");
        }
    }
}
