//! The configuration-changing admin APIs: AlterConfigs (33), which replaces a
//! resource's whole set, and IncrementalAlterConfigs (44), which sets or deletes keys
//! one by one. They share their layouts but for the operation byte.

use super::{DecodeResult, Reader, Writer, read_array, write_array_v};

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

impl AlterConfigsRequest {
    /// `incremental`: the IncrementalAlterConfigs layout (an operation per key).
    pub fn decode(r: &mut Reader<'_>, incremental: bool) -> DecodeResult<Self> {
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
                let value = r.nullable_string("value")?.map(str::to_owned);
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

    pub fn encode(&self, out: &mut Vec<u8>, flex: bool) {
        write_array_v(out, flex, &self.resources, |o, res| {
            o.put_i8(res.resource_type);
            o.put_str(flex, &res.name);
            write_array_v(o, flex, &res.configs, |o, c| {
                o.put_str(flex, &c.name);
                if let Some(op) = c.op {
                    o.put_i8(op);
                }
                o.put_nstr(flex, c.value.as_deref());
                o.put_tags(flex);
            });
            o.put_tags(flex);
        });
        out.put_i8(self.validate_only as i8);
        out.put_tags(flex);
    }
}

/// One resource's outcome: (error code, message, resource type, resource name).
pub type AlterConfigsResult = (i16, Option<String>, i8, String);

pub fn encode_alter_configs_response(
    out: &mut Vec<u8>,
    results: &[AlterConfigsResult],
    flex: bool,
) {
    out.put_i32(0);
    write_array_v(out, flex, results, |o, (code, msg, t, name)| {
        o.put_i16(*code);
        o.put_nstr(flex, msg.as_deref());
        o.put_i8(*t);
        o.put_str(flex, name);
        o.put_tags(flex);
    });
    out.put_tags(flex);
}

pub fn decode_alter_configs_response(r: &mut Reader<'_>) -> DecodeResult<Vec<AlterConfigsResult>> {
    r.i32("throttle_time_ms")?;
    let results = read_array(r, "responses", 7, |r| {
        let res = (
            r.i16("error_code")?,
            r.nullable_string("error_message")?.map(str::to_owned),
            r.i8("resource_type")?,
            r.string("resource_name")?.to_owned(),
        );
        r.tags()?;
        Ok(res)
    })?;
    r.tags()?;
    Ok(results)
}
