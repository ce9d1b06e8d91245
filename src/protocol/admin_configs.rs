//! The configuration-changing admin APIs: AlterConfigs (33), which replaces a
//! resource's whole set, and IncrementalAlterConfigs (44), which sets or deletes keys
//! one by one. They share their layouts but for the operation byte.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array};

/// IncrementalAlterConfigs' operations.
pub const OP_SET: i8 = 0;
pub const OP_DELETE: i8 = 1;
pub const OP_APPEND: i8 = 2;
pub const OP_SUBTRACT: i8 = 3;

/// One key to change: its operation (`None` in AlterConfigs, where every key listed is set
/// and every key not listed is removed) and value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterableConfig {
    pub name: String,
    pub op: Option<i8>,
    pub value: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigsResource {
    pub resource_type: i8,
    pub name: String,
    pub configs: Vec<AlterableConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigsRequest {
    pub resources: Vec<AlterConfigsResource>,
    pub validate_only: bool,
}

/// Read as the layout of the reader's api key: IncrementalAlterConfigs has an operation per key.
impl<'a> Decode<'a> for AlterConfigsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let incremental = r.api_key() == super::header::INCREMENTAL_ALTER_CONFIGS;
        let resources = read_array(r, "resources", 5, |r| {
            let resource_type = r.i8("resource_type")?;
            let name = r.string("resource_name")?.to_owned();
            let configs = read_array(r, "configs", 3, |r| {
                let name = r.string("name")?.to_owned();
                let op = if incremental {
                    Some(r.i8("config_operation")?)
                } else {
                    None
                };
                let value = r.nullable_owned("value")?;
                r.tags()?;
                Ok(AlterableConfig { name, op, value })
            })?;
            r.tags()?;
            Ok(AlterConfigsResource {
                resource_type,
                name,
                configs,
            })
        })?;
        let validate_only = r.bool("validate_only")?;
        r.tags()?;
        Ok(AlterConfigsRequest {
            resources,
            validate_only,
        })
    }
}

/// Written with each key's operation when it has one (IncrementalAlterConfigs).
impl Encode for AlterConfigsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.resources, |o, res| {
            o.put_i8(res.resource_type);
            o.put_str(&res.name);
            o.put_array(&res.configs, |o, c| {
                o.put_str(&c.name);
                if let Some(op) = c.op {
                    o.put_i8(op);
                }
                o.put_nstr(c.value.as_deref());
                o.put_tags();
            });
            o.put_tags();
        });
        out.put_i8(self.validate_only as i8);
        out.put_tags();
    }
}

/// One resource's outcome: (error code, message, resource type, resource name).
pub type AlterConfigsResult = (i16, Option<String>, i8, String);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigsResponse {
    pub results: Vec<AlterConfigsResult>,
}

impl Encode for AlterConfigsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_array(&self.results, |o, (code, msg, t, name)| {
            o.put_i16(*code);
            o.put_nstr(msg.as_deref());
            o.put_i8(*t);
            o.put_str(name);
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for AlterConfigsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let results = read_array(r, "responses", 7, |r| {
            let res = (
                r.i16("error_code")?,
                r.nullable_owned("error_message")?,
                r.i8("resource_type")?,
                r.string("resource_name")?.to_owned(),
            );
            r.tags()?;
            Ok(res)
        })?;
        r.tags()?;
        Ok(AlterConfigsResponse { results })
    }
}
