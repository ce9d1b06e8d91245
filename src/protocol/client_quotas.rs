//! DescribeClientQuotas (48) and AlterClientQuotas (49), KIP-546: read and change the quotas
//! of users, client ids and addresses — what `kafka-configs.sh --entity-type clients|users|ips`
//! and the admin clients send. v1 is flexible.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array};

/// An entity as the wire names it: (entity type, name; `None` is the type's default).
pub type EntityParts = Vec<(String, Option<String>)>;

/// An entity with its (key, value) quotas.
pub type EntityQuotas = (EntityParts, Vec<(String, f64)>);

fn read_entity(r: &mut Reader<'_>) -> DecodeResult<EntityParts> {
    read_array(r, "entity", 3, |r| {
        let kind = r.string("entity_type")?.to_owned();
        let name = r.nullable_owned("entity_name")?;
        r.tags()?;
        Ok((kind, name))
    })
}

fn put_entity(out: &mut Out<'_>, entity: &EntityParts) {
    out.put_array(entity, |o, (kind, name)| {
        o.put_str(kind);
        o.put_nstr(name.as_deref());
        o.put_tags();
    });
}

/// How a filter component matches an entity's name.
pub const MATCH_EXACT: i8 = 0;
pub const MATCH_DEFAULT: i8 = 1;
pub const MATCH_ANY: i8 = 2;

#[derive(Debug, Clone, PartialEq)]
pub struct QuotaFilterComponent {
    pub entity_type: String,
    pub match_type: i8,
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DescribeClientQuotasRequest {
    pub components: Vec<QuotaFilterComponent>,
    /// Only entities with exactly the filter's types (else: at least them).
    pub strict: bool,
}

impl<'a> Decode<'a> for DescribeClientQuotasRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let components = read_array(r, "components", 4, |r| {
            let c = QuotaFilterComponent {
                entity_type: r.string("entity_type")?.to_owned(),
                match_type: r.i8("match_type")?,
                name: r.nullable_owned("match")?,
            };
            r.tags()?;
            Ok(c)
        })?;
        let strict = r.bool("strict")?;
        r.tags()?;
        Ok(DescribeClientQuotasRequest { components, strict })
    }
}

impl Encode for DescribeClientQuotasRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.components, |o, c| {
            o.put_str(&c.entity_type);
            o.put_i8(c.match_type);
            o.put_nstr(c.name.as_deref());
            o.put_tags();
        });
        out.put_i8(self.strict as i8);
        out.put_tags();
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DescribeClientQuotasResponse {
    pub error_code: i16,
    pub error_message: Option<String>,
    /// Each entity with its (key, value) quotas; `None` with an error.
    pub entries: Option<Vec<EntityQuotas>>,
}

impl Encode for DescribeClientQuotasResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_i16(self.error_code);
        out.put_nstr(self.error_message.as_deref());
        match &self.entries {
            None => out.put_len(None),
            Some(entries) => out.put_array(entries, |o, (entity, values)| {
                put_entity(o, entity);
                o.put_array(values, |o, (k, v)| {
                    o.put_str(k);
                    o.put_f64(*v);
                    o.put_tags();
                });
                o.put_tags();
            }),
        }
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeClientQuotasResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_owned("error_message")?;
        let entries = match r.nullable_array_len("entries", 8)? {
            None => None,
            Some(n) => Some(
                (0..n)
                    .map(|_| {
                        let entity = read_entity(r)?;
                        let values = read_array(r, "values", 10, |r| {
                            let k = r.string("key")?.to_owned();
                            let v = r.f64("value")?;
                            r.tags()?;
                            Ok((k, v))
                        })?;
                        r.tags()?;
                        Ok((entity, values))
                    })
                    .collect::<DecodeResult<_>>()?,
            ),
        };
        r.tags()?;
        Ok(DescribeClientQuotasResponse {
            error_code,
            error_message,
            entries,
        })
    }
}

/// One change: set `key` to `value`, or remove it.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaOp {
    pub key: String,
    pub value: f64,
    pub remove: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlterClientQuotasRequest {
    pub entries: Vec<(EntityParts, Vec<QuotaOp>)>,
    pub validate_only: bool,
}

impl<'a> Decode<'a> for AlterClientQuotasRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let entries = read_array(r, "entries", 8, |r| {
            let entity = read_entity(r)?;
            let ops = read_array(r, "ops", 11, |r| {
                let op = QuotaOp {
                    key: r.string("key")?.to_owned(),
                    value: r.f64("value")?,
                    remove: r.bool("remove")?,
                };
                r.tags()?;
                Ok(op)
            })?;
            r.tags()?;
            Ok((entity, ops))
        })?;
        let validate_only = r.bool("validate_only")?;
        r.tags()?;
        Ok(AlterClientQuotasRequest {
            entries,
            validate_only,
        })
    }
}

impl Encode for AlterClientQuotasRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.entries, |o, (entity, ops)| {
            put_entity(o, entity);
            o.put_array(ops, |o, op| {
                o.put_str(&op.key);
                o.put_f64(op.value);
                o.put_i8(op.remove as i8);
                o.put_tags();
            });
            o.put_tags();
        });
        out.put_i8(self.validate_only as i8);
        out.put_tags();
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlterClientQuotasResponse {
    /// Per entry of the request: error code, message, the entity.
    pub entries: Vec<(i16, Option<String>, EntityParts)>,
}

impl Encode for AlterClientQuotasResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_array(&self.entries, |o, (code, message, entity)| {
            o.put_i16(*code);
            o.put_nstr(message.as_deref());
            put_entity(o, entity);
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for AlterClientQuotasResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let entries = read_array(r, "entries", 6, |r| {
            let code = r.i16("error_code")?;
            let message = r.nullable_owned("error_message")?;
            let entity = read_entity(r)?;
            r.tags()?;
            Ok((code, message, entity))
        })?;
        r.tags()?;
        Ok(AlterClientQuotasResponse { entries })
    }
}
