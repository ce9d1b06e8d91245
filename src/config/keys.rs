//! Every broker configuration key, once: its name, Kafka's type, default, bounds, the topic-level
//! key that overrides it, whether it may change while the broker runs and whether its value is a
//! secret, and the line that documents it. Parsing (`Props`), the "unknown key" error,
//! DescribeConfigs, the topic-level checks (`zk::topic_config`) and the README's table
//! (`tests/readme_config_keys.rs`) all read this table, so a new key is one row here and the
//! field it fills.

/// Kafka's type of a value, as DescribeConfigs reports it (`ConfigEntry.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    Double = 6,
    List = 7,
    Password = 9,
}

impl Type {
    pub fn name(self) -> &'static str {
        match self {
            Type::Boolean => "boolean",
            Type::String => "string",
            Type::Int => "int",
            Type::Long => "long",
            Type::Double => "double",
            Type::List => "list",
            Type::Password => "password",
        }
    }
}

/// What a value may be, beyond its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Valid {
    Any,
    /// A number at least this.
    AtLeast(i64),
    /// A number above zero (for doubles).
    Positive,
    /// A positive number, or -1 for unlimited.
    PositiveOrUnlimited,
    OneOf(&'static [&'static str]),
    /// A comma-separated list, each item one of these.
    ListOf(&'static [&'static str]),
    /// A number from 0 to 1.
    Ratio,
    /// KIP-73's throttled replicas: `partition:broker,…` or `*`.
    Replicas,
}

/// A key's default when the file does not set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultIs {
    Value(&'static str),
    /// The broker does not start without it.
    Required,
    /// Worked out from other keys; the documentation line says how.
    Derived,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
    pub ty: Type,
    pub default: DefaultIs,
    pub valid: Valid,
    /// The topic-level key (`/config/topics/[topic]`) that overrides this one for a topic.
    pub topic: Option<&'static str>,
    /// Whether it may be changed while the broker runs (`/config/brokers/…`, KIP-226): only
    /// keys whose every reader takes a change live are marked.
    pub dynamic: bool,
    /// A secret: never logged, and DescribeConfigs reports no value.
    pub sensitive: bool,
    pub doc: &'static str,
}

const fn key(name: &'static str, ty: Type, default: &'static str, doc: &'static str) -> Key {
    Key {
        name,
        ty,
        default: DefaultIs::Value(default),
        valid: Valid::Any,
        topic: None,
        dynamic: false,
        sensitive: false,
        doc,
    }
}

const fn required(name: &'static str, ty: Type, doc: &'static str) -> Key {
    Key {
        default: DefaultIs::Required,
        ..key(name, ty, "", doc)
    }
}

const fn derived(name: &'static str, ty: Type, doc: &'static str) -> Key {
    Key {
        default: DefaultIs::Derived,
        ..key(name, ty, "", doc)
    }
}

impl Key {
    const fn min(self, n: i64) -> Key {
        Key {
            valid: Valid::AtLeast(n),
            ..self
        }
    }
    const fn valid(self, valid: Valid) -> Key {
        Key { valid, ..self }
    }
    /// A secret: never logged, and DescribeConfigs reports no value.
    const fn secret(self) -> Key {
        Key {
            sensitive: true,
            ..self
        }
    }

    /// May be changed while the broker runs (`config::dynamic`).
    const fn live(self) -> Key {
        Key {
            dynamic: true,
            ..self
        }
    }

    const fn topic(self, topic: &'static str) -> Key {
        Key {
            topic: Some(topic),
            ..self
        }
    }

    /// Checks a value against the key's type and bounds; the error names the key.
    pub fn check(&self, v: &str) -> Result<(), String> {
        self.check_as(self.name, v)
    }

    /// The same check, with the error naming `k` (a topic-level key checked by this rule).
    pub fn check_as(&self, k: &str, v: &str) -> Result<(), String> {
        let number = match self.ty {
            Type::Boolean if v != "true" && v != "false" => {
                return Err(format!("`{k}` must be true or false, got `{v}`"));
            }
            Type::Int => Some(v.parse::<i32>().map(f64::from).map_err(|_| ())),
            Type::Long => Some(v.parse::<i64>().map(|n| n as f64).map_err(|_| ())),
            Type::Double => Some(v.parse::<f64>().map_err(|_| ())),
            _ => None,
        };
        let n = match number {
            Some(Ok(n)) if !n.is_nan() => Some(n),
            Some(_) => {
                let ty = self.ty.name();
                return Err(format!("`{k}` must be a number ({ty}), got `{v}`"));
            }
            None => None,
        };
        let ok = match (self.valid, n) {
            (Valid::Any, _) => true,
            (Valid::AtLeast(min), Some(n)) => n >= min as f64,
            (Valid::Positive, Some(n)) => n > 0.0,
            (Valid::PositiveOrUnlimited, Some(n)) => n > 0.0 || n == -1.0,
            (Valid::OneOf(allowed), _) => allowed.contains(&v),
            (Valid::ListOf(allowed), _) => v.split(',').all(|x| allowed.contains(&x.trim())),
            (Valid::Ratio, Some(n)) => (0.0..=1.0).contains(&n),
            (Valid::Replicas, _) => super::replication_throttle::parse(v).is_ok(),
            (_, None) => true,
        };
        if ok {
            return Ok(());
        }
        Err(match self.valid {
            Valid::AtLeast(min) => format!("`{k}` must be at least {min}, got `{v}`"),
            Valid::OneOf(allowed) => {
                format!("`{k}` must be one of {}, got `{v}`", allowed.join(", "))
            }
            Valid::ListOf(allowed) => format!(
                "`{k}` must be a comma-separated list of {}, got `{v}`",
                allowed.join(", ")
            ),
            Valid::Ratio => format!("`{k}` must be between 0 and 1, got `{v}`"),
            Valid::Replicas => {
                format!("`{k}` must be `*` or a list of partition:broker, got `{v}`")
            }
            Valid::PositiveOrUnlimited => {
                format!("`{k}` must be positive, or -1 for unlimited, got `{v}`")
            }
            _ => format!("`{k}` must be positive, got `{v}`"),
        })
    }

    /// The default as the README and DescribeConfigs show it.
    pub fn default_text(&self) -> Option<&'static str> {
        match self.default {
            DefaultIs::Value(v) => Some(v),
            DefaultIs::Required | DefaultIs::Derived => None,
        }
    }
}

// Kafka's ConfigDef spellings, to keep the rows short.
const BOOLEAN: Type = Type::Boolean;
const STRING: Type = Type::String;
const INT: Type = Type::Int;
const LONG: Type = Type::Long;
const DOUBLE: Type = Type::Double;
const LIST: Type = Type::List;
const PASSWORD: Type = Type::Password;

const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];

/// The broker's keys, in the order DescribeConfigs and the README list them.
#[rustfmt::skip] // a table: one row per line
pub const BROKER: &[Key] = &[
    required("broker.id", INT, "This broker's id, unique in the cluster.").min(0),
    derived("listeners", STRING, "Where to listen: `NAME://HOST:PORT,…` (KIP-103); by default `PLAINTEXT://127.0.0.1:9092`, or 0.8's `host.name` and `port`."),
    derived("advertised.listeners", STRING, "By the same names, the address registered for others to dial when it is not the bound one; a name left out registers its bound address."),
    key("listener.security.protocol.map", STRING, "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", "Each listener name's security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."),
    derived("inter.broker.listener.name", STRING, "The listener brokers and the controller dial each other on: the only listener, else the one `security.inter.broker.protocol` names, else the one named PLAINTEXT. Every broker must name the same."),
    derived("security.inter.broker.protocol", STRING, "Kafka's older way to pick the inter-broker listener: the listener of that name (set this or `inter.broker.listener.name`, not both)."),
    key("sasl.enabled.mechanisms", LIST, "GSSAPI", "The SASL mechanisms a SASL listener serves (`listener.name.<l>.sasl.enabled.mechanisms` for one listener): PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. Kafka's default GSSAPI is not served, so a SASL listener needs this set."),
    key("connections.max.reauth.ms", LONG, "0", "When positive, a SASL login lasts this long (KIP-368): the client is told so and must authenticate again on its connection before then, or the connection is closed at its next request; 0, a login lasts as long as its connection.").min(0),
    key("sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", "The mechanism a broker authenticates with on a SASL inter-broker listener, with the `username` and `password` of that listener's JAAS entry for it."),
    key("authorizer.class.name", STRING, "", "`kafka.security.authorizer.AclAuthorizer` (or the older `kafka.security.auth.SimpleAclAuthorizer`) turns on ACLs, kept in ZooKeeper as Kafka keeps them; empty, every request is allowed."),
    key("super.users", STRING, "", "Principals allowed everything whatever the ACLs, separated by `;`: `User:admin;User:broker` (brokers' own user belongs here when ACLs are on)."),
    key("allow.everyone.if.no.acl.found", BOOLEAN, "false", "Whether a resource no ACL names is open to everyone (else only to super users)."),
    key("ssl.keystore.type", STRING, "PEM", "The keystore's format on an SSL or SASL_SSL listener: PEM files (KIP-651), the only one gregor reads (Kafka's default, JKS, is refused by name). Each `ssl.` key may be set for one listener as `listener.name.<l>.ssl.…`.").valid(Valid::OneOf(&["PEM"])),
    key("ssl.keystore.location", STRING, "", "A PEM file with the private key (PKCS#8, encrypted with `ssl.key.password` or not) and the certificate chain, leaf first."),
    key("ssl.keystore.key", PASSWORD, "", "The private key as PEM text, instead of a file (with `ssl.keystore.certificate.chain`).").secret(),
    key("ssl.keystore.certificate.chain", STRING, "", "The certificate chain as PEM text, leaf first, beside `ssl.keystore.key`."),
    key("ssl.key.password", PASSWORD, "", "The password of an encrypted private key.").secret(),
    key("ssl.keystore.password", PASSWORD, "", "A JKS or PKCS12 keystore's password: not used by PEM keystores, and refused when set (a PEM key's password is `ssl.key.password`).").secret(),
    key("ssl.truststore.type", STRING, "PEM", "The truststore's format: PEM.").valid(Valid::OneOf(&["PEM"])),
    key("ssl.truststore.location", STRING, "", "A PEM file of the certificates trusted to sign clients' certificates (and, on the inter-broker listener, other brokers')."),
    key("ssl.truststore.certificates", STRING, "", "The trusted certificates as PEM text, instead of a file."),
    key("ssl.truststore.password", PASSWORD, "", "A JKS or PKCS12 truststore's password: refused when set, as for the keystore's.").secret(),
    key("ssl.client.auth", STRING, "none", "Whether clients must present a certificate: `required`, `requested` (a client without one is `User:ANONYMOUS`) or `none`.").valid(Valid::OneOf(&["none", "requested", "required"])),
    key("ssl.enabled.protocols", LIST, "TLSv1.2,TLSv1.3", "The TLS versions served."),
    key("ssl.protocol", STRING, "TLSv1.3", "Kafka's preferred protocol for its SSLContext; gregor negotiates the highest of `ssl.enabled.protocols`, so this is accepted and informational.").valid(Valid::OneOf(&["TLSv1.2", "TLSv1.3", "TLS"])),
    key("ssl.cipher.suites", LIST, "", "The cipher suites served, by IANA name (`TLS_AES_128_GCM_SHA256`, `TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`, …); empty for rustls' defaults."),
    key("ssl.endpoint.identification.algorithm", STRING, "https", "`https`: a broker dialing another's TLS inter-broker listener checks that the certificate names the host it dialed; empty: it does not."),
    key("ssl.principal.mapping.rules", STRING, "DEFAULT", "How a client certificate's subject (`CN=alice,OU=eng,O=acme`) becomes its principal: `DEFAULT` (the name itself) and `RULE:pattern/replacement/[LU]`, first match wins."),
    key("ssl.allow.dn.changes", BOOLEAN, "false", "Whether a keystore set dynamically (`listener.name.<l>.ssl.keystore.…`) may hold a certificate whose subject differs from the one it replaces."),
    key("ssl.allow.san.changes", BOOLEAN, "false", "Whether a keystore set dynamically may hold a certificate whose subject alternative names differ from the one it replaces."),
    key("password.encoder.secret", PASSWORD, "", "The secret the dynamic configuration's secrets (`listener.name.<l>.ssl.key.password`, a JAAS entry, …) are encrypted with in ZooKeeper; the same on every broker. Unset, such a secret cannot be set dynamically.").secret(),
    key("password.encoder.old.secret", PASSWORD, "", "The secret `password.encoder.secret` replaced: stored secrets are still read with it, and a broker stores its own again under the new secret at start.").secret(),
    key("password.encoder.keyfactory.algorithm", STRING, "", "How the encryption key is derived from the secret: `PBKDF2WithHmacSHA512` (empty: the same) or `PBKDF2WithHmacSHA256`.").valid(Valid::OneOf(&["", "PBKDF2WithHmacSHA512", "PBKDF2WithHmacSHA256"])),
    key("password.encoder.cipher.algorithm", STRING, "AES/CBC/PKCS5Padding", "The cipher of stored secrets: Kafka's default, the only one served.").valid(Valid::OneOf(&["AES/CBC/PKCS5Padding"])),
    key("password.encoder.key.length", INT, "128", "The AES key's length in bits: 128, 192 or 256.").valid(Valid::OneOf(&["128", "192", "256"])),
    key("password.encoder.iterations", INT, "4096", "PBKDF2's iterations for the encryption key.").min(1024),
    derived("host.name", STRING, "0.8's listener host, read when `listeners` is unset (default 127.0.0.1)."),
    derived("port", INT, "0.8's listener port, read when `listeners` is unset (default 9092).").min(0),
    derived("log.dirs", LIST, "The directories that hold the partitions' logs, comma-separated (or `log.dir`; one is required)."),
    derived("log.dir", STRING, "One log directory, read when `log.dirs` is unset."),
    required("zookeeper.connect", STRING, "`host:port,host:port,…[/chroot]` of the ZooKeeper ensemble (3.6 or later), tried in turn."),
    key("zookeeper.session.timeout.ms", INT, "6000", "The ZooKeeper session timeout; every ZooKeeper call waits at most two of them (at least 4 s).").min(1),
    derived("zookeeper.connection.timeout.ms", INT, "How long registering at start-up keeps trying while ZooKeeper is out of reach; the session timeout by default.").min(1),
    key("num.partitions", INT, "1", "Partitions of a topic created without a count.").min(1),
    key("default.replication.factor", INT, "1", "Replicas of a topic created without a count.").min(1),
    key("auto.create.topics.enable", BOOLEAN, "true", "Whether a Metadata or Produce request for an unknown topic creates it."),
    key("delete.topic.enable", BOOLEAN, "true", "Whether DeleteTopics may delete topics; false answers it TOPIC_DELETION_DISABLED (73)."),
    key("log.segment.bytes", INT, "1073741824", "The size at which a segment file is rolled.").min(14).topic("segment.bytes").live(),
    key("log.retention.hours", INT, "168", "Retention by age in hours, when `log.retention.ms` and `log.retention.minutes` are unset.").live(),
    derived("log.retention.minutes", INT, "Retention by age in minutes, when `log.retention.ms` is unset; unset by default.").live(),
    derived("log.retention.ms", LONG, "Retention by age; -1 keeps segments forever. By default `log.retention.minutes`, else `log.retention.hours`.").min(-1).topic("retention.ms").live(),
    key("log.retention.bytes", LONG, "-1", "Retention by size per partition; -1 is unlimited.").min(-1).topic("retention.bytes").live(),
    key("log.segment.delete.delay.ms", LONG, "60000", "How long the files of a segment that left the log (retention, DeleteRecords, truncation) stay on disk, renamed `.deleted`, before they are unlinked: a reader that still holds one keeps reading it.").min(0).topic("file.delete.delay.ms").live(),
    key("log.retention.check.interval.ms", LONG, "300000", "How often retention looks for segments to delete.").min(1),
    key("log.roll.hours", INT, "168", "The active segment is rolled after this many hours even when not full, when `log.roll.ms` is unset.").min(1).live(),
    derived("log.roll.ms", LONG, "The active segment is rolled after this long even when not full (the cleaner never cleans the active segment); by default `log.roll.hours`.").min(1).topic("segment.ms").live(),
    key("log.cleanup.policy", LIST, "delete", "What becomes of old segments: `delete` (retention deletes them), `compact` (the cleaner keeps each key's latest record), or `compact,delete`.").valid(Valid::ListOf(&["delete", "compact"])).topic("cleanup.policy").live(),
    key("log.cleaner.enable", BOOLEAN, "true", "Whether the cleaner runs; without it compacted topics grow without bound."),
    key("log.cleaner.threads", INT, "1", "Threads cleaning logs, each its own log at a time.").min(1).live(),
    key("log.cleaner.dedupe.buffer.size", LONG, "134217728", "Memory of the cleaners' key → offset maps, shared by the threads (24 bytes per key): a dirty section with more keys is cleaned in several passes.").min(1024).live(),
    key("log.cleaner.io.buffer.size", INT, "524288", "Bytes the cleaner reads at a time.").min(1024).live(),
    key("log.cleaner.io.max.bytes.per.second", DOUBLE, "1.7976931348623157E308", "The cleaners' reads and writes together are held below this rate.").valid(Valid::Positive).live(),
    key("log.cleaner.backoff.ms", LONG, "15000", "How long a cleaner waits when no log needs cleaning.").min(0).live(),
    key("log.cleaner.min.cleanable.ratio", DOUBLE, "0.5", "A compacted log is cleaned once this share of its bytes is dirty (not yet cleaned).").valid(Valid::Ratio).topic("min.cleanable.dirty.ratio").live(),
    key("log.cleaner.delete.retention.ms", LONG, "86400000", "How long a tombstone (a record with a null value) stays after the clean that first kept it, for consumers reading behind to see it.").min(0).topic("delete.retention.ms").live(),
    key("log.cleaner.min.compaction.lag.ms", LONG, "0", "Records younger than this are not compacted: a consumer this close to the head sees every record.").min(0).topic("min.compaction.lag.ms").live(),
    key("log.cleaner.max.compaction.lag.ms", LONG, "9223372036854775807", "A log whose oldest dirty record is older than this is cleaned whatever its dirty ratio.").min(1).topic("max.compaction.lag.ms").live(),
    key("log.flush.interval.messages", LONG, "9223372036854775807", "Force an fsync after this many appended messages (by default, leave it to the OS and to replication).").min(1).live(),
    derived("log.flush.interval.ms", LONG, "Force an fsync of a log written to longer ago than this; unset, leave it to the OS.").min(0),
    key("log.index.interval.bytes", INT, "4096", "One offset-index entry per this many bytes of log.").min(1).live(),
    key("message.max.bytes", INT, "1000012", "The largest record batch a producer may send.").min(0).topic("max.message.bytes").live(),
    key("compression.type", STRING, "producer", "The codec produced batches are stored with: `producer` (as the producer sent them), `uncompressed`, `gzip`, `snappy`, `lz4` or `zstd`; a batch in another codec is compressed again on append (format v2 batches; v0/v1 message sets are stored as sent).").valid(Valid::OneOf(&["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"])).topic("compression.type").live(),
    key("log.message.timestamp.type", STRING, "CreateTime", "`CreateTime`, or `LogAppendTime`: format v2 batches get the broker's clock as their timestamp.").valid(Valid::OneOf(TIMESTAMP_TYPES)).topic("message.timestamp.type").live(),
    key("producer.id.expiration.ms", INT, "86400000", "How long an idle idempotent producer's state is kept.").min(1),
    key("transaction.state.log.num.partitions", INT, "50", "Partitions of `__transaction_state`, the compacted topic holding the transaction coordinators' state: a transactional id's coordinator is the leader of its partition (Java `hashCode` of the id, modulo this).").min(1),
    key("transaction.state.log.replication.factor", INT, "3", "Replicas of `__transaction_state`; it is created on the first transactional FindCoordinator once this many brokers are alive.").min(1),
    key("transaction.state.log.min.isr", INT, "2", "`min.insync.replicas` of `__transaction_state`: a coordinator's state change is durable on this many replicas before it answers.").min(1),
    key("transaction.state.log.segment.bytes", INT, "104857600", "`segment.bytes` of `__transaction_state` (small, so the cleaner can compact old states away).").min(14),
    key("transaction.max.timeout.ms", INT, "900000", "The longest `transaction.timeout.ms` a producer may ask for; longer gets INVALID_TRANSACTION_TIMEOUT (50).").min(1),
    key("transactional.id.expiration.ms", INT, "604800000", "A transactional id with no transaction open that sent nothing for this long is forgotten (its state deleted).").min(1),
    key("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, "10000", "How often each coordinator aborts the transactions open longer than their timeout.").min(1),
    key("transaction.remove.expired.transaction.cleanup.interval.ms", INT, "3600000", "How often each coordinator forgets the transactional ids idle past `transactional.id.expiration.ms`.").min(1),
    key("min.insync.replicas", INT, "1", "The ISR size an acks=all produce needs, else NOT_ENOUGH_REPLICAS.").min(1).topic("min.insync.replicas").live(),
    key("auto.leader.rebalance.enable", BOOLEAN, "true", "Whether the controller moves leadership back to preferred replicas (the first assigned) by itself, every `leader.imbalance.check.interval.seconds`, for brokers over `leader.imbalance.per.broker.percentage`."),
    key("leader.imbalance.check.interval.seconds", LONG, "300", "How often the controller looks for brokers that lead too few of the partitions they are preferred for.").min(1),
    key("leader.imbalance.per.broker.percentage", INT, "10", "The share (percent) of a broker's preferred partitions led by others above which the controller elects it back (100 or more: never).").min(0),
    key("unclean.leader.election.enable", BOOLEAN, "false", "Whether a replica outside the ISR may become leader when no ISR member is alive (losing acknowledged writes).").live(),
    key("fetch.max.bytes", INT, "57671680", "The most record bytes one Fetch answer carries, whatever its partitions ask.").min(1),
    key("replica.lag.time.max.ms", LONG, "10000", "A follower that has not caught up for this long leaves the ISR.").min(1),
    key("num.replica.fetchers", INT, "1", "Fetcher threads per source broker copying the partitions this broker follows; a partition always goes to the same one (for as long as the count stands).").min(1).live(),
    key("replica.fetch.max.bytes", INT, "1048576", "The bytes a follower asks of each partition per fetch (a larger first batch still comes whole, KIP-74).").min(1),
    key("replica.fetch.response.max.bytes", INT, "10485760", "The record bytes a follower asks of one whole answer.").min(1),
    key("replica.fetch.wait.max.ms", INT, "500", "How long a follower's fetch waits at the leader for data.").min(1),
    key("replica.fetch.min.bytes", INT, "1", "The bytes a follower's fetch waits for.").min(1),
    key("replica.high.watermark.checkpoint.interval.ms", LONG, "5000", "How often high watermarks are written to disk.").min(1),
    key("controlled.shutdown.enable", BOOLEAN, "true", "On SIGTERM, ask the controller to move leadership away before stopping."),
    key("controlled.shutdown.max.retries", INT, "3", "How many times a controlled shutdown is asked for before the broker stops anyway.").min(0),
    key("controlled.shutdown.retry.backoff.ms", LONG, "1000", "The wait between those attempts.").min(1),
    key("controller.socket.timeout.ms", INT, "30000", "How long the controller's requests to a broker, and a broker's ControlledShutdown, wait for an answer (a ControlledShutdown stops waiting as soon as another controller is elected).").min(1),
    key("coordinator.rebalance.timeout.ms", LONG, "10000", "gregor's, for the spec's coordinator: how long a rebalance waits for every member's Stop and Start answers.").min(1),
    key("coordinator.rebalance.backoff.ms", LONG, "500", "gregor's: the first wait before a failed rebalance is tried again, doubling per failure.").min(1),
    key("group.min.session.timeout.ms", INT, "6000", "The shortest session timeout a Kafka-protocol group member may ask for.").min(1),
    key("group.max.session.timeout.ms", INT, "1800000", "The longest session timeout a member may ask for.").min(1),
    key("group.initial.rebalance.delay.ms", INT, "3000", "How long an empty group's first join waits for more members.").min(0),
    key("group.max.size", INT, "1000", "The most members of one Kafka-protocol group (Kafka: unbounded; gregor keeps a group in one ZooKeeper node).").min(1),
    key("num.recovery.threads.per.data.dir", INT, "4", "Threads that open and recover the logs at start-up (Kafka: 1; with 10,000 partitions four restart a broker 2–5× sooner).").min(1),
    key("socket.request.max.bytes", INT, "104857600", "The largest request a client may announce; larger, its connection is closed.").min(1),
    key("queued.max.request.bytes", LONG, "268435456", "Bytes of requests being read that the broker holds (KIP-72); past it connections wait, unread; -1 is unlimited (Kafka's default).").valid(Valid::PositiveOrUnlimited),
    key("max.connections", INT, "1000", "Client connections per broker; at the limit the least recently used idle one is closed to make room.").min(1).live(),
    key("max.connections.per.ip", INT, "250", "Connections per source address (Kafka: unlimited); past it new ones are closed at once.").min(1).live(),
    key("max.connections.per.ip.overrides", STRING, "", "`host:count,…`: other limits for some addresses (a host name counts for every address it resolves to at start).").live(),
    key("max.connection.creation.rate", DOUBLE, "2147483647", "New connections per second, broker-wide; the acceptor waits (KIP-612). The default is unlimited.").valid(Valid::Positive).live(),
    key("max.connection.creation.rate.per.ip", DOUBLE, "1000", "gregor's: new connections per second from one address; past it they are closed at once.").valid(Valid::Positive),
    key("connections.max.idle.ms", LONG, "600000", "An idle connection, or one whose request or answer has been in transit for longer, is closed.").min(1),
    key("quota.window.num", INT, "11", "Client quotas are measured over this many windows (KIP-13).").min(1),
    key("quota.window.size.seconds", INT, "1", "The length of one client quota window.").min(1),
    key("leader.replication.throttled.rate", LONG, "9223372036854775807", "Bytes a second this broker, as leader, serves the replicas its topics list in `leader.replication.throttled.replicas` while they are out of sync (KIP-73; `kafka-reassign-partitions --throttle` sets it).").min(0).live(),
    key("follower.replication.throttled.rate", LONG, "9223372036854775807", "Bytes a second this broker, as follower, fetches for its replicas listed in `follower.replication.throttled.replicas` while they are out of sync.").min(0).live(),
    key("replication.quota.window.num", INT, "11", "Replication throttles are measured over this many windows.").min(1),
    key("replication.quota.window.size.seconds", INT, "1", "The length of one replication throttle window.").min(1),
    key("controller.quota.window.num", INT, "11", "Controller mutation quotas are measured over this many windows (KIP-599).").min(1),
    key("controller.quota.window.size.seconds", INT, "1", "The length of one controller mutation quota window.").min(1),
    derived("metrics.listener", STRING, "`HOST:PORT` where `GET /metrics` serves Prometheus metrics; unset, none."),
];

/// A broker key by name.
pub fn find(name: &str) -> Option<&'static Key> {
    BROKER.iter().find(|k| k.name == name)
}

/// The keys set per listener as `listener.name.<listener>.<key>` (Kafka's listener prefix,
/// the listener's name in lower case), with what each says. Their values are secrets where
/// they hold JAAS text.
pub const LISTENER_KEYS: &[(&str, &str)] = &[
    (
        "sasl.enabled.mechanisms",
        "The SASL mechanisms this listener serves, instead of `sasl.enabled.mechanisms`.",
    ),
    (
        "plain.sasl.jaas.config",
        "PLAIN's users, `org.apache.kafka.common.security.plain.PlainLoginModule required user_<name>=\"<password>\" …;` (and `username`/`password`, the broker's own login on its inter-broker listener). Required where PLAIN is enabled.",
    ),
    (
        "scram-sha-256.sasl.jaas.config",
        "`org.apache.kafka.common.security.scram.ScramLoginModule required;` (accepted, not required: SCRAM users live in ZooKeeper), with `username`/`password` for the broker's own inter-broker login.",
    ),
    ("scram-sha-512.sasl.jaas.config", "As for SCRAM-SHA-256."),
];

/// Splits `listener.name.<listener>.<key>` into the listener (upper case, as `listeners`
/// names it) and a key of `LISTENER_KEYS` or an `ssl.` key of the table.
pub fn listener_key(name: &str) -> Option<(String, &'static str)> {
    let rest = name.strip_prefix("listener.name.")?;
    let (listener, key) = rest.split_once('.')?;
    let key = LISTENER_KEYS
        .iter()
        .map(|(k, _)| *k)
        .chain(
            BROKER
                .iter()
                .map(|k| k.name)
                .filter(|k| k.starts_with("ssl.")),
        )
        .find(|k| *k == key)?;
    (!listener.is_empty()).then(|| (listener.to_uppercase(), key))
}

/// Whether a per-listener key holds a secret (a JAAS entry, or a secret `ssl.` key).
pub fn listener_key_is_secret(key: &str) -> bool {
    key.ends_with("sasl.jaas.config") || find(key).is_some_and(|k| k.sensitive)
}

/// Keys that stand in for another when it is unset, the key first (Kafka's
/// `DynamicBrokerConfig.brokerConfigSynonyms`).
const SYNONYMS: &[&[&str]] = &[
    &[
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ],
    &["log.roll.ms", "log.roll.hours"],
    &["log.dirs", "log.dir"],
];

/// `name` and the keys that stand in for it, in order of precedence.
pub fn synonyms(name: &str) -> Vec<&'static str> {
    for group in SYNONYMS {
        if let Some(i) = group.iter().position(|k| *k == name) {
            return group[i..].to_vec();
        }
    }
    find(name).map(|k| vec![k.name]).unwrap_or_default()
}

/// Topic-level keys with no broker key under them (Kafka's, with its defaults).
#[rustfmt::skip] // a table: one row per line
pub const TOPIC_ONLY: &[Key] = &[
    key("leader.replication.throttled.replicas", LIST, "", "The replicas whose leader holds them to `leader.replication.throttled.rate` while they are out of sync: `partition:broker,…` (the brokers leading), or `*` for all (KIP-73).").valid(Valid::Replicas).live(),
    key("follower.replication.throttled.replicas", LIST, "", "The replicas a follower holds to `follower.replication.throttled.rate` while they are out of sync: `partition:broker,…` (the brokers following), or `*`.").valid(Valid::Replicas).live(),
];

/// The key of a topic-level key's rules: the broker key it overrides, or its own row of
/// `TOPIC_ONLY`.
pub fn for_topic(topic_key: &str) -> Option<&'static Key> {
    BROKER
        .iter()
        .find(|k| k.topic == Some(topic_key))
        .or_else(|| TOPIC_ONLY.iter().find(|k| k.name == topic_key))
}

/// The topic-level keys gregor serves.
pub fn topic_keys() -> impl Iterator<Item = &'static str> {
    BROKER
        .iter()
        .filter_map(|k| k.topic)
        .chain(TOPIC_ONLY.iter().map(|k| k.name))
}

/// The README's table of keys, generated from the one above.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| key | type | default | topic-level key | dynamic | |\n|---|---|---|---|---|---|\n",
    );
    // A topic-only key's row: no broker key, its own name in the topic-level column.
    let rows = BROKER
        .iter()
        .map(|k| (format!("`{}`", k.name), k.topic, k))
        .chain(
            TOPIC_ONLY
                .iter()
                .map(|k| ("(topic only)".into(), Some(k.name), k)),
        );
    for (name, topic, k) in rows {
        let default = match k.default {
            DefaultIs::Value("") => "(empty)".to_owned(),
            DefaultIs::Value(v) => format!("`{v}`"),
            DefaultIs::Required => "required".to_owned(),
            DefaultIs::Derived => String::new(),
        };
        let topic = topic.map_or(String::new(), |t| format!("`{t}`"));
        let dynamic = if k.dynamic { "yes" } else { "" };
        out.push_str(&format!(
            "| {name} | {} | {default} | {topic} | {dynamic} | {} |\n",
            k.ty.name(),
            k.doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_defaults_pass_their_own_checks() {
        for (i, k) in BROKER.iter().enumerate() {
            assert!(
                BROKER[..i].iter().all(|o| o.name != k.name),
                "{} twice",
                k.name
            );
            if let Some(d) = k.default_text().filter(|d| !d.is_empty()) {
                k.check(d)
                    .unwrap_or_else(|e| panic!("default of {}: {e}", k.name));
            }
        }
        assert_eq!(for_topic("retention.ms").unwrap().name, "log.retention.ms");
    }

    #[test]
    fn checks_name_the_key_and_the_rule() {
        let seg = find("log.segment.bytes").unwrap();
        assert!(seg.check("13").unwrap_err().contains("at least 14"));
        assert!(seg.check("5000000000").unwrap_err().contains("int"));
        assert!(seg.check("1048576").is_ok());
        let q = find("queued.max.request.bytes").unwrap();
        assert!(q.check("-1").is_ok() && q.check("0").is_err());
        let t = find("log.message.timestamp.type").unwrap();
        assert!(
            t.check("Now")
                .unwrap_err()
                .contains("CreateTime, LogAppendTime")
        );
        let b = find("auto.create.topics.enable").unwrap();
        assert!(b.check("yes").unwrap_err().contains("true or false"));
        let r = find("max.connection.creation.rate").unwrap();
        assert!(r.check("0.5").is_ok() && r.check("0").is_err() && r.check("NaN").is_err());
    }
}
