//! DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), KIP-554: list and
//! change users' SCRAM credentials over the wire, as `kafka-configs --bootstrap-server
//! --entity-type users` and the admin clients do. The client salts the password itself; the
//! request carries the salt and the salted password, never the password. Both are flexible
//! from v0.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeUserScramCredentialsRequest {
    /// `None` or empty: every user with a credential.
    pub users: Option<Vec<String>>,
}

impl<'a> Decode<'a> for DescribeUserScramCredentialsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let users = match r.nullable_array_len("users", 2)? {
            None => None,
            Some(n) => Some(
                (0..n)
                    .map(|_| {
                        let name = r.string("name")?.to_owned();
                        r.tags()?;
                        Ok(name)
                    })
                    .collect::<DecodeResult<Vec<_>>>()?,
            ),
        };
        r.tags()?;
        Ok(DescribeUserScramCredentialsRequest { users })
    }
}

impl Encode for DescribeUserScramCredentialsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        match &self.users {
            None => out.put_len(None),
            Some(users) => out.put_array(users, |o, u| {
                o.put_str(u);
                o.put_tags();
            }),
        }
        out.put_tags();
    }
}

/// One user's answer: its credentials as (mechanism code, iterations), or an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserScramResult {
    pub user: String,
    pub error_code: i16,
    pub error_message: Option<String>,
    pub credentials: Vec<(i8, i32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeUserScramCredentialsResponse {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub results: Vec<UserScramResult>,
}

impl Encode for DescribeUserScramCredentialsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_i16(self.error_code);
        out.put_nstr(self.error_message.as_deref());
        out.put_array(&self.results, |o, u| {
            o.put_str(&u.user);
            o.put_i16(u.error_code);
            o.put_nstr(u.error_message.as_deref());
            o.put_array(&u.credentials, |o, (m, i)| {
                o.put_i8(*m);
                o.put_i32(*i);
                o.put_tags();
            });
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeUserScramCredentialsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_owned("error_message")?;
        let results = read_array(r, "results", 4, |r| {
            let user = r.string("user")?.to_owned();
            let error_code = r.i16("error_code")?;
            let error_message = r.nullable_owned("error_message")?;
            let credentials = read_array(r, "credential_infos", 6, |r| {
                let c = (r.i8("mechanism")?, r.i32("iterations")?);
                r.tags()?;
                Ok(c)
            })?;
            r.tags()?;
            Ok(UserScramResult {
                user,
                error_code,
                error_message,
                credentials,
            })
        })?;
        r.tags()?;
        Ok(DescribeUserScramCredentialsResponse {
            error_code,
            error_message,
            results,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramUpsertion {
    pub name: String,
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub salted_password: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterUserScramCredentialsRequest {
    /// (user, mechanism code).
    pub deletions: Vec<(String, i8)>,
    pub upsertions: Vec<ScramUpsertion>,
}

impl<'a> Decode<'a> for AlterUserScramCredentialsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let deletions = read_array(r, "deletions", 3, |r| {
            let d = (r.string("name")?.to_owned(), r.i8("mechanism")?);
            r.tags()?;
            Ok(d)
        })?;
        let upsertions = read_array(r, "upsertions", 9, |r| {
            let u = ScramUpsertion {
                name: r.string("name")?.to_owned(),
                mechanism: r.i8("mechanism")?,
                iterations: r.i32("iterations")?,
                salt: r.nullable_bytes("salt")?.unwrap_or_default().to_vec(),
                salted_password: r
                    .nullable_bytes("salted_password")?
                    .unwrap_or_default()
                    .to_vec(),
            };
            r.tags()?;
            Ok(u)
        })?;
        r.tags()?;
        Ok(AlterUserScramCredentialsRequest {
            deletions,
            upsertions,
        })
    }
}

impl Encode for AlterUserScramCredentialsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.deletions, |o, (n, m)| {
            o.put_str(n);
            o.put_i8(*m);
            o.put_tags();
        });
        out.put_array(&self.upsertions, |o, u| {
            o.put_str(&u.name);
            o.put_i8(u.mechanism);
            o.put_i32(u.iterations);
            o.put_bytes(Some(&u.salt));
            o.put_bytes(Some(&u.salted_password));
            o.put_tags();
        });
        out.put_tags();
    }
}

/// (user, error code, error message), one per user named in the request.
pub type AlterScramResult = (String, i16, Option<String>);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterUserScramCredentialsResponse {
    pub results: Vec<AlterScramResult>,
}

impl Encode for AlterUserScramCredentialsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.put_array(&self.results, |o, (u, e, m)| {
            o.put_str(u);
            o.put_i16(*e);
            o.put_nstr(m.as_deref());
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for AlterUserScramCredentialsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let results = read_array(r, "results", 4, |r| {
            let x = (
                r.string("user")?.to_owned(),
                r.i16("error_code")?,
                r.nullable_owned("error_message")?,
            );
            r.tags()?;
            Ok(x)
        })?;
        r.tags()?;
        Ok(AlterUserScramCredentialsResponse { results })
    }
}
