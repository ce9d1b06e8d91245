//! SaslHandshake (17) and SaslAuthenticate (36), KIP-43 and KIP-152: a client on a SASL
//! listener names a mechanism, then sends the mechanism's tokens wrapped in SaslAuthenticate
//! requests (v1 of the handshake), or bare and size-prefixed (v0, the 0.10 form). Every
//! version of both is classic except SaslAuthenticate v2.

use super::{Decode, DecodeResult, Encode, Out, Reader};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslHandshakeRequest {
    pub mechanism: String,
}

impl<'a> Decode<'a> for SaslHandshakeRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(SaslHandshakeRequest {
            mechanism: r.string("mechanism")?.to_owned(),
        })
    }
}

impl Encode for SaslHandshakeRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_str(&self.mechanism);
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslHandshakeResponse {
    pub error_code: i16,
    /// The mechanisms the listener serves.
    pub mechanisms: Vec<String>,
}

impl Encode for SaslHandshakeResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.error_code);
        out.put_strs(&self.mechanisms);
    }
}

impl<'a> Decode<'a> for SaslHandshakeResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(SaslHandshakeResponse {
            error_code: r.i16("error_code")?,
            mechanisms: r.string_array("mechanisms")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslAuthenticateRequest<'a> {
    pub auth_bytes: &'a [u8],
}

impl<'a> Decode<'a> for SaslAuthenticateRequest<'a> {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let auth_bytes = r.nullable_bytes("auth_bytes")?.unwrap_or_default();
        r.tags()?;
        Ok(SaslAuthenticateRequest { auth_bytes })
    }
}

impl Encode for SaslAuthenticateRequest<'_> {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_bytes(Some(self.auth_bytes));
        out.put_tags();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslAuthenticateResponse {
    pub error_code: i16,
    pub error_message: Option<String>,
    pub auth_bytes: Vec<u8>,
    /// v1+: when the client must authenticate again (KIP-368); 0 for never.
    pub session_lifetime_ms: i64,
}

impl Encode for SaslAuthenticateResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i16(self.error_code);
        out.put_nstr(self.error_message.as_deref());
        out.put_bytes(Some(&self.auth_bytes));
        out.since(1, |o| o.put_i64(self.session_lifetime_ms));
        out.put_tags();
    }
}

impl<'a> Decode<'a> for SaslAuthenticateResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let error_code = r.i16("error_code")?;
        let error_message = r.nullable_owned("error_message")?;
        let auth_bytes = r.nullable_bytes("auth_bytes")?.unwrap_or_default().to_vec();
        let session_lifetime_ms = r.since(1, 0, |r| r.i64("session_lifetime_ms"))?;
        r.tags()?;
        Ok(SaslAuthenticateResponse {
            error_code,
            error_message,
            auth_bytes,
            session_lifetime_ms,
        })
    }
}
