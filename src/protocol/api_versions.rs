//! ApiVersions (key 18). A version above ours gets a v0-format UNSUPPORTED_VERSION
//! naming our ApiVersions range, so the client retries with one we serve (protocol sheet §3.8).
//! Its flexible versions have a flexible body but response header v0 (`header::response_is_flexible`).

use super::header::{API_VERSIONS, SUPPORTED_APIS};
use super::{Decode, DecodeResult, Encode, ErrorCode, Out, Reader, read_array};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiVersionsResponse {
    pub error_code: i16,
    pub apis: Vec<(i16, i16, i16)>,
    /// Present from v1 on.
    pub throttle_time_ms: Option<i32>,
    /// The layout the response is written in: v0 for an UNSUPPORTED_VERSION answer.
    pub version: i16,
}

impl ApiVersionsResponse {
    /// The answer to an ApiVersions request at `version`.
    pub fn for_version(version: i16) -> Self {
        let max = SUPPORTED_APIS
            .iter()
            .find(|a| a.key == API_VERSIONS)
            .map_or(0, |a| a.max);
        if version > max || version < 0 {
            return ApiVersionsResponse {
                error_code: ErrorCode::UnsupportedVersion.code(),
                apis: vec![(API_VERSIONS, 0, max)],
                throttle_time_ms: None,
                version: 0,
            };
        }
        ApiVersionsResponse {
            error_code: 0,
            apis: SUPPORTED_APIS
                .iter()
                .map(|a| (a.key, a.min, a.max))
                .collect(),
            throttle_time_ms: (version >= 1).then_some(0),
            version,
        }
    }
}

/// Written in the layout of `self.version`, not the request's: an answer to a version above
/// ours is in v0's.
impl Encode for ApiVersionsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let out = &mut Out::body(out.bytes(), API_VERSIONS, self.version);
        out.put_i16(self.error_code);
        out.put_len(Some(self.apis.len()));
        for a in &self.apis {
            out.put_i16(a.0);
            out.put_i16(a.1);
            out.put_i16(a.2);
            out.put_tags();
        }
        if let Some(t) = self.throttle_time_ms {
            out.put_i32(t);
        }
        // librdkafka 2.0.2 insists on the (empty) top-level tag buffer of v3.
        out.put_tags();
    }
}

/// Read as the answer to a request at the reader's version; an error answer may be in the v0
/// layout.
impl<'a> Decode<'a> for ApiVersionsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        let error_code = r.i16("error_code")?;
        let flex = r.is_flexible() && error_code == 0;
        r.set_flexible(flex);
        let apis = read_array(r, "api_keys", 6, |r| {
            let a = (r.i16("api_key")?, r.i16("min")?, r.i16("max")?);
            r.tags()?;
            Ok(a)
        })?;
        let throttle_time_ms = if version >= 1 && r.remaining() >= 4 {
            Some(r.i32("throttle_time_ms")?)
        } else {
            None
        };
        r.tags()?;
        Ok(ApiVersionsResponse {
            error_code,
            apis,
            throttle_time_ms,
            version: if flex || error_code == 0 { version } else { 0 },
        })
    }
}

/// The request: empty before v3; v3 names the client software (compact strings, then tags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiVersionsRequest {
    pub client_software: Option<(String, String)>,
}

impl<'a> Decode<'a> for ApiVersionsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let version = r.version();
        if version < 3 {
            return Ok(ApiVersionsRequest {
                client_software: None,
            });
        }
        let name = r.string("client_software_name")?.to_owned();
        let ver = r.string("client_software_version")?.to_owned();
        r.tags()?;
        Ok(ApiVersionsRequest {
            client_software: Some((name, ver)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{decode_body, encode_body};

    #[test]
    fn unsupported_version_answers_in_v0_format_with_our_range() {
        let r = ApiVersionsResponse::for_version(4);
        let mut buf = Vec::new();
        encode_body(&r, &mut buf, API_VERSIONS, 4);
        // Test vector A.2 of the protocol sheet with our range 0–3, without size and
        // correlation id.
        assert_eq!(buf, [0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 3]);
    }

    #[test]
    fn v1_has_throttle_and_round_trips() {
        let r = ApiVersionsResponse::for_version(1);
        let mut buf = Vec::new();
        encode_body(&r, &mut buf, API_VERSIONS, 1);
        let back: ApiVersionsResponse = decode_body(&buf, API_VERSIONS, 1).unwrap();
        assert_eq!(back, r);
        assert!(back.apis.contains(&(18, 0, 3)));
    }

    #[test]
    fn v3_is_compact_with_tag_buffers() {
        let r = ApiVersionsResponse::for_version(3);
        let mut buf = Vec::new();
        encode_body(&r, &mut buf, API_VERSIONS, 3);
        // error 0, compact count n+1, then the first entry (Produce) with its empty tags.
        let n = SUPPORTED_APIS.len() as u8;
        assert_eq!(buf[..3], [0, 0, n + 1]);
        assert_eq!(buf[9], 0, "entry tag buffer");
        assert_eq!(buf[buf.len() - 5..], [0, 0, 0, 0, 0], "throttle then tags");
        assert_eq!(
            decode_body::<ApiVersionsResponse>(&buf, API_VERSIONS, 3).unwrap(),
            r
        );
    }

    #[test]
    fn v3_request_names_the_client_software() {
        // As the Java client sends it: "apache-kafka-java" "4.3.0", empty tags.
        let mut body = vec![18];
        body.extend_from_slice(b"apache-kafka-java");
        body.push(6);
        body.extend_from_slice(b"4.3.0");
        body.push(0);
        let req: ApiVersionsRequest = decode_body(&body, API_VERSIONS, 3).unwrap();
        assert_eq!(
            req.client_software,
            Some(("apache-kafka-java".into(), "4.3.0".into()))
        );
    }
}
