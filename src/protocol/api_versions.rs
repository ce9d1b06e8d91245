//! ApiVersions (key 18): v0–v2 served; a higher version gets a v0-format UNSUPPORTED_VERSION
//! naming our ApiVersions range, so librdkafka retries with v0 (protocol sheet §3.8).

use super::header::{API_VERSIONS, SUPPORTED_APIS};
use super::{Decode, DecodeResult, ErrorCode, Reader, Writer, read_array, write_array};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiVersionsResponse {
    pub error_code: i16,
    pub apis: Vec<(i16, i16, i16)>,
    /// Present from v1 on.
    pub throttle_time_ms: Option<i32>,
}

impl ApiVersionsResponse {
    /// The answer to an ApiVersions request at `version`.
    pub fn for_version(version: i16) -> Self {
        let max = SUPPORTED_APIS
            .iter()
            .find(|a| a.0 == API_VERSIONS)
            .map(|a| a.2)
            .unwrap_or(0);
        if version > max || version < 0 {
            return ApiVersionsResponse {
                error_code: ErrorCode::UnsupportedVersion.code(),
                apis: vec![(API_VERSIONS, 0, max)],
                throttle_time_ms: None,
            };
        }
        ApiVersionsResponse {
            error_code: 0,
            apis: SUPPORTED_APIS.to_vec(),
            throttle_time_ms: (version >= 1).then_some(0),
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_i16(self.error_code);
        write_array(out, &self.apis, |o, a| {
            o.put_i16(a.0);
            o.put_i16(a.1);
            o.put_i16(a.2);
        });
        if let Some(t) = self.throttle_time_ms {
            out.put_i32(t);
        }
    }

    pub fn decode(r: &mut Reader<'_>, version: i16) -> DecodeResult<Self> {
        let error_code = r.i16("error_code")?;
        let apis = read_array(r, "api_keys", 6, |r| {
            Ok((r.i16("api_key")?, r.i16("min")?, r.i16("max")?))
        })?;
        let throttle_time_ms = if version >= 1 && r.remaining() >= 4 {
            Some(r.i32("throttle_time_ms")?)
        } else {
            None
        };
        Ok(ApiVersionsResponse {
            error_code,
            apis,
            throttle_time_ms,
        })
    }
}

/// The v0–v2 request has an empty body; this type exists so dispatch can insist on that.
pub struct ApiVersionsRequest;

impl<'a> Decode<'a> for ApiVersionsRequest {
    fn decode(_r: &mut Reader<'a>) -> DecodeResult<Self> {
        Ok(ApiVersionsRequest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_version_answers_in_v0_format_with_our_range() {
        let r = ApiVersionsResponse::for_version(3);
        let mut buf = Vec::new();
        r.encode(&mut buf);
        // Test vector A.2 of the protocol sheet, without size and correlation id.
        assert_eq!(buf, [0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 2]);
    }

    #[test]
    fn v1_has_throttle_and_round_trips() {
        let r = ApiVersionsResponse::for_version(1);
        let mut buf = Vec::new();
        r.encode(&mut buf);
        let back = ApiVersionsResponse::decode(&mut Reader::new(&buf), 1).unwrap();
        assert_eq!(back, r);
        assert!(back.apis.contains(&(0, 0, 0)));
    }
}
