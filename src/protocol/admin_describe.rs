//! The describing admin APIs: DescribeConfigs (32) — topic and broker configuration, as
//! `kafka-topics.sh --describe` and the admin clients read it — and DescribeCluster (60),
//! the brokers and the controller for `Admin.describeCluster()`. Field versions follow
//! Kafka's JSON schemas.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array};

/// Kafka's ConfigResource types.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;

/// Kafka's ConfigSource values.
pub const SOURCE_TOPIC: i8 = 1;
pub const SOURCE_DYNAMIC_BROKER: i8 = 2;
pub const SOURCE_DYNAMIC_DEFAULT_BROKER: i8 = 3;
pub const SOURCE_STATIC_BROKER: i8 = 4;
pub const SOURCE_DEFAULT: i8 = 5;

/// One resource to describe; `keys: None` asks for every key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigResource {
    pub resource_type: i8,
    pub name: String,
    pub keys: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsRequest {
    pub resources: Vec<ConfigResource>,
    /// v1+.
    pub include_synonyms: bool,
    /// v3+.
    pub include_documentation: bool,
}

impl<'a> Decode<'a> for DescribeConfigsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let resources = read_array(r, "resources", 5, |r| {
            let resource_type = r.i8("resource_type")?;
            let name = r.string("resource_name")?.to_owned();
            let keys = match r.nullable_array_len("configuration_keys", 1)? {
                None => None,
                Some(n) => {
                    let mut v = Vec::with_capacity(n);
                    for _ in 0..n {
                        v.push(r.string("configuration_key")?.to_owned());
                    }
                    Some(v)
                }
            };
            r.tags()?;
            Ok(ConfigResource {
                resource_type,
                name,
                keys,
            })
        })?;
        let include_synonyms = version >= 1 && r.bool("include_synonyms")?;
        let include_documentation = version >= 3 && r.bool("include_documentation")?;
        r.tags()?;
        Ok(DescribeConfigsRequest {
            resources,
            include_synonyms,
            include_documentation,
        })
    }
}

impl Encode for DescribeConfigsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.resources, |o, res| {
            o.put_i8(res.resource_type);
            o.put_str(&res.name);
            o.put_len(res.keys.as_ref().map(Vec::len));
            for k in res.keys.iter().flatten() {
                o.put_str(k);
            }
            o.put_tags();
        });
        out.since(1, |o| o.put_i8(self.include_synonyms as i8));
        out.since(3, |o| o.put_i8(self.include_documentation as i8));
        out.put_tags();
    }
}

/// One configuration value of a described resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConfig {
    pub name: String,
    pub value: Option<String>,
    pub read_only: bool,
    /// v1+ (v0 carries `is_default`, true for `SOURCE_DEFAULT`).
    pub source: i8,
    pub sensitive: bool,
    /// v3+.
    pub config_type: i8,
    /// v3+.
    pub documentation: Option<String>,
    /// v1+, when the request asks for them: each value the key could take, most specific
    /// source first.
    pub synonyms: Vec<ConfigSynonym>,
}

/// A key and value from one source: a synonym of a described key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSynonym {
    pub name: String,
    pub value: Option<String>,
    pub source: i8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsResult {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub resource_type: i8,
    pub name: String,
    pub configs: Vec<DescribedConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsResponse {
    pub results: Vec<DescribeConfigsResult>,
}

impl Encode for DescribeConfigsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let version = out.version();
        let results = &self.results;
        out.put_i32(0);
        out.put_array(results, |o, res| {
            o.put_i16(res.error_code);
            o.put_nstr(res.error_message.as_deref());
            o.put_i8(res.resource_type);
            o.put_str(&res.name);
            o.put_array(&res.configs, |o, c| {
                o.put_str(&c.name);
                o.put_nstr(c.value.as_deref());
                o.put_i8(c.read_only as i8);
                if version == 0 {
                    o.put_i8((c.source == SOURCE_DEFAULT) as i8);
                } else {
                    o.put_i8(c.source);
                }
                o.put_i8(c.sensitive as i8);
                o.since(1, |o| {
                    o.put_array(&c.synonyms, |o, s| {
                        o.put_str(&s.name);
                        o.put_nstr(s.value.as_deref());
                        o.put_i8(s.source);
                        o.put_tags();
                    })
                });
                if version >= 3 {
                    o.put_i8(c.config_type);
                    o.put_nstr(c.documentation.as_deref());
                }
                o.put_tags();
            });
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeConfigsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        r.i32("throttle_time_ms")?;
        let results = read_array(r, "results", 9, |r| {
            let error_code = r.i16("error_code")?;
            let error_message = r.nullable_owned("error_message")?;
            let resource_type = r.i8("resource_type")?;
            let name = r.string("resource_name")?.to_owned();
            let configs = read_array(r, "configs", 6, |r| {
                let name = r.string("name")?.to_owned();
                let value = r.nullable_owned("value")?;
                let read_only = r.bool("read_only")?;
                let source = if version == 0 {
                    if r.bool("is_default")? {
                        SOURCE_DEFAULT
                    } else {
                        SOURCE_TOPIC
                    }
                } else {
                    r.i8("config_source")?
                };
                let sensitive = r.bool("is_sensitive")?;
                let synonyms = if version >= 1 {
                    read_array(r, "synonyms", 4, |r| {
                        let name = r.string("name")?.to_owned();
                        let value = r.nullable_owned("value")?;
                        let source = r.i8("source")?;
                        r.tags()?;
                        Ok(ConfigSynonym {
                            name,
                            value,
                            source,
                        })
                    })?
                } else {
                    Vec::new()
                };
                let (mut config_type, mut documentation) = (0, None);
                if version >= 3 {
                    config_type = r.i8("config_type")?;
                    documentation = r.nullable_owned("documentation")?;
                }
                r.tags()?;
                Ok(DescribedConfig {
                    name,
                    value,
                    read_only,
                    source,
                    sensitive,
                    config_type,
                    documentation,
                    synonyms,
                })
            })?;
            r.tags()?;
            Ok(DescribeConfigsResult {
                error_code,
                error_message,
                resource_type,
                name,
                configs,
            })
        })?;
        r.tags()?;
        Ok(DescribeConfigsResponse { results })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeClusterRequest {
    pub include_cluster_authorized_operations: bool,
    /// v1+: 1 brokers, 2 controllers (KRaft's; gregor has none to list).
    pub endpoint_type: i8,
}

impl<'a> Decode<'a> for DescribeClusterRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let include_cluster_authorized_operations =
            r.bool("include_cluster_authorized_operations")?;
        let endpoint_type = r.since(1, 1, |r| r.i8("endpoint_type"))?;
        r.tags()?;
        Ok(DescribeClusterRequest {
            include_cluster_authorized_operations,
            endpoint_type,
        })
    }
}

impl Encode for DescribeClusterRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i8(self.include_cluster_authorized_operations as i8);
        out.since(1, |o| o.put_i8(self.endpoint_type));
        out.put_tags();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeClusterResponse {
    pub error_code: i16,
    pub error_message: Option<String>,
    /// v1+.
    pub endpoint_type: i8,
    pub cluster_id: String,
    pub controller_id: i32,
    /// (id, host, port).
    pub brokers: Vec<(i32, String, i32)>,
}

/// Kafka's "unknown" for `cluster_authorized_operations`.
const OPERATIONS_UNKNOWN: i32 = i32::MIN;

impl Encode for DescribeClusterResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_i16(self.error_code);
        out.put_nstr(self.error_message.as_deref());
        out.since(1, |o| o.put_i8(self.endpoint_type));
        out.put_str(&self.cluster_id);
        out.put_i32(self.controller_id);
        out.put_array(&self.brokers, |o, (id, host, port)| {
            o.put_i32(*id);
            o.put_str(host);
            o.put_i32(*port);
            o.put_nstr(None); // rack
            o.put_tags();
        });
        out.put_i32(OPERATIONS_UNKNOWN);
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeClusterResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_owned("error_message")?;
        let endpoint_type = r.since(1, 1, |r| r.i8("endpoint_type"))?;
        let cluster_id = r.string("cluster_id")?.to_owned();
        let controller_id = r.i32("controller_id")?;
        let brokers = read_array(r, "brokers", 10, |r| {
            let b = (
                r.i32("broker_id")?,
                r.string("host")?.to_owned(),
                r.i32("port")?,
            );
            r.nullable_string("rack")?;
            r.tags()?;
            Ok(b)
        })?;
        r.i32("cluster_authorized_operations")?;
        r.tags()?;
        Ok(DescribeClusterResponse {
            error_code,
            error_message,
            endpoint_type,
            cluster_id,
            controller_id,
            brokers,
        })
    }
}
