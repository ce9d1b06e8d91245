//! DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), v1–v3 (Kafka 4 serves no v0; v1
//! added the pattern type, v2 is flexible): what `kafka-acls.sh` and the admin clients send.
//! Enum fields are Kafka's codes (`security::acl`).

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array};

/// A binding as the wire carries it: resource (type, name, pattern type) and entry
/// (principal, host, operation, permission).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclBinding {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission: i8,
}

/// A filter: the same fields, names, principal and host nullable (any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclBindingFilter {
    pub resource_type: i8,
    pub resource_name: Option<String>,
    pub pattern_type: i8,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: i8,
    pub permission: i8,
}

fn read_binding(r: &mut Reader<'_>) -> DecodeResult<AclBinding> {
    Ok(AclBinding {
        resource_type: r.i8("resource_type")?,
        resource_name: r.string("resource_name")?.to_owned(),
        pattern_type: r.i8("pattern_type")?,
        principal: r.string("principal")?.to_owned(),
        host: r.string("host")?.to_owned(),
        operation: r.i8("operation")?,
        permission: r.i8("permission_type")?,
    })
}

fn put_binding(o: &mut Out<'_>, b: &AclBinding) {
    o.put_i8(b.resource_type);
    o.put_str(&b.resource_name);
    o.put_i8(b.pattern_type);
    o.put_str(&b.principal);
    o.put_str(&b.host);
    o.put_i8(b.operation);
    o.put_i8(b.permission);
}

fn read_filter(r: &mut Reader<'_>) -> DecodeResult<AclBindingFilter> {
    Ok(AclBindingFilter {
        resource_type: r.i8("resource_type_filter")?,
        resource_name: r.nullable_owned("resource_name_filter")?,
        pattern_type: r.i8("pattern_type_filter")?,
        principal: r.nullable_owned("principal_filter")?,
        host: r.nullable_owned("host_filter")?,
        operation: r.i8("operation")?,
        permission: r.i8("permission_type")?,
    })
}

fn put_filter(out: &mut Out<'_>, f: &AclBindingFilter) {
    out.put_i8(f.resource_type);
    out.put_nstr(f.resource_name.as_deref());
    out.put_i8(f.pattern_type);
    out.put_nstr(f.principal.as_deref());
    out.put_nstr(f.host.as_deref());
    out.put_i8(f.operation);
    out.put_i8(f.permission);
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeAclsRequest {
    pub filter: AclBindingFilter,
}

impl<'a> Decode<'a> for DescribeAclsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let filter = read_filter(r)?;
        r.tags()?;
        Ok(DescribeAclsRequest { filter })
    }
}

impl Encode for DescribeAclsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        put_filter(out, &self.filter);
        out.put_tags();
    }
}

/// A resource pattern with its entries: (type, name, pattern type, [(principal, host,
/// operation, permission)]).
pub type DescribedResource = (i8, String, i8, Vec<(String, String, i8, i8)>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeAclsResponse {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub resources: Vec<DescribedResource>,
}

impl Encode for DescribeAclsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_i16(self.error_code);
        out.put_nstr(self.error_message.as_deref());
        out.put_array(&self.resources, |o, (t, name, pattern, acls)| {
            o.put_i8(*t);
            o.put_str(name);
            o.put_i8(*pattern);
            o.put_array(acls, |o, (principal, host, op, perm)| {
                o.put_str(principal);
                o.put_str(host);
                o.put_i8(*op);
                o.put_i8(*perm);
                o.put_tags();
            });
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeAclsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_owned("error_message")?;
        let resources = read_array(r, "resources", 5, |r| {
            let t = r.i8("resource_type")?;
            let name = r.string("resource_name")?.to_owned();
            let pattern = r.i8("pattern_type")?;
            let acls = read_array(r, "acls", 6, |r| {
                let a = (
                    r.string("principal")?.to_owned(),
                    r.string("host")?.to_owned(),
                    r.i8("operation")?,
                    r.i8("permission_type")?,
                );
                r.tags()?;
                Ok(a)
            })?;
            r.tags()?;
            Ok((t, name, pattern, acls))
        })?;
        r.tags()?;
        Ok(DescribeAclsResponse {
            error_code,
            error_message,
            resources,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateAclsRequest {
    pub creations: Vec<AclBinding>,
}

impl<'a> Decode<'a> for CreateAclsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let creations = read_array(r, "creations", 9, |r| {
            let b = read_binding(r)?;
            r.tags()?;
            Ok(b)
        })?;
        r.tags()?;
        Ok(CreateAclsRequest { creations })
    }
}

impl Encode for CreateAclsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.creations, |o, b| {
            put_binding(o, b);
            o.put_tags();
        });
        out.put_tags();
    }
}

/// One result per creation: (error code, message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateAclsResponse {
    pub results: Vec<(i16, Option<String>)>,
}

impl Encode for CreateAclsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_array(&self.results, |o, (code, msg)| {
            o.put_i16(*code);
            o.put_nstr(msg.as_deref());
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for CreateAclsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let results = read_array(r, "results", 3, |r| {
            let x = (r.i16("error_code")?, r.nullable_owned("error_message")?);
            r.tags()?;
            Ok(x)
        })?;
        r.tags()?;
        Ok(CreateAclsResponse { results })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteAclsRequest {
    pub filters: Vec<AclBindingFilter>,
}

impl<'a> Decode<'a> for DeleteAclsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let filters = read_array(r, "filters", 9, |r| {
            let f = read_filter(r)?;
            r.tags()?;
            Ok(f)
        })?;
        r.tags()?;
        Ok(DeleteAclsRequest { filters })
    }
}

impl Encode for DeleteAclsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.filters, |o, f| {
            put_filter(o, f);
            o.put_tags();
        });
        out.put_tags();
    }
}

/// Per filter: its error and message, and each binding it deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteAclsFilterResult {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub matching: Vec<AclBinding>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteAclsResponse {
    pub results: Vec<DeleteAclsFilterResult>,
}

impl Encode for DeleteAclsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_array(&self.results, |o, f| {
            o.put_i16(f.error_code);
            o.put_nstr(f.error_message.as_deref());
            o.put_array(&f.matching, |o, b| {
                o.put_i16(0);
                o.put_nstr(None);
                put_binding(o, b);
                o.put_tags();
            });
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DeleteAclsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let results = read_array(r, "filter_results", 4, |r| {
            let error_code = r.i16("error_code")?;
            let error_message = r.nullable_owned("error_message")?;
            let matching = read_array(r, "matching_acls", 12, |r| {
                r.i16("error_code")?;
                r.nullable_owned("error_message")?;
                let b = read_binding(r)?;
                r.tags()?;
                Ok(b)
            })?;
            r.tags()?;
            Ok(DeleteAclsFilterResult {
                error_code,
                error_message,
                matching,
            })
        })?;
        r.tags()?;
        Ok(DeleteAclsResponse { results })
    }
}
