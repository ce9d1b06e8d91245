//! Request and response headers, and the api keys gregor serves.

use super::primitives::{DecodeResult, Reader, Writer};

pub const PRODUCE: i16 = 0;
pub const FETCH: i16 = 1;
pub const LIST_OFFSETS: i16 = 2;
pub const METADATA: i16 = 3;
pub const LEADER_AND_ISR: i16 = 4;
pub const STOP_REPLICA: i16 = 5;
pub const UPDATE_METADATA: i16 = 6;
pub const CONTROLLED_SHUTDOWN: i16 = 7;
pub const OFFSET_COMMIT: i16 = 8;
pub const OFFSET_FETCH: i16 = 9;
/// FindCoordinator; its v0 is 0.8's GroupCoordinator.
pub const FIND_COORDINATOR: i16 = 10;
pub const JOIN_GROUP: i16 = 11;
pub const HEARTBEAT: i16 = 12;
pub const LEAVE_GROUP: i16 = 13;
pub const SYNC_GROUP: i16 = 14;
pub const DESCRIBE_GROUPS: i16 = 15;
pub const LIST_GROUPS: i16 = 16;
pub const API_VERSIONS: i16 = 18;
pub const DELETE_GROUPS: i16 = 42;

/// (api key, min version, max version) for every API this broker serves. ApiVersions answers
/// with exactly this list (decision B of the protocol sheet: advertise what we implement).
pub const SUPPORTED_APIS: &[(i16, i16, i16)] = &[
    (PRODUCE, 0, 0),
    (FETCH, 0, 0),
    (LIST_OFFSETS, 0, 0),
    (METADATA, 0, 0),
    (LEADER_AND_ISR, 0, 0),
    (STOP_REPLICA, 0, 0),
    (UPDATE_METADATA, 0, 0),
    (CONTROLLED_SHUTDOWN, 0, 1),
    (OFFSET_COMMIT, 0, 7),
    (OFFSET_FETCH, 0, 5),
    (FIND_COORDINATOR, 0, 2),
    (JOIN_GROUP, 0, 5),
    (HEARTBEAT, 0, 3),
    (LEAVE_GROUP, 0, 3),
    (SYNC_GROUP, 0, 3),
    (DESCRIBE_GROUPS, 0, 4),
    (LIST_GROUPS, 0, 2),
    (API_VERSIONS, 0, 2),
    (DELETE_GROUPS, 0, 1),
];

/// Whether (key, version) is in `SUPPORTED_APIS`.
pub fn is_supported(api_key: i16, api_version: i16) -> bool {
    SUPPORTED_APIS
        .iter()
        .any(|&(k, lo, hi)| k == api_key && (lo..=hi).contains(&api_version))
}

/// Request header v1 in modern numbering (the "v0" header of the 0.8 protocol): every request
/// gregor serves uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader<'a> {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<&'a str>,
}

impl<'a> RequestHeader<'a> {
    /// Reads the header. For an ApiVersions request at a version above what we serve (v3 is
    /// flexible and has a tag buffer after the client id), the rest of the frame is not parsed:
    /// the answer is an UNSUPPORTED_VERSION that does not depend on the body.
    pub fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let api_key = r.i16("api_key")?;
        let api_version = r.i16("api_version")?;
        let correlation_id = r.i32("correlation_id")?;
        // ControlledShutdown v0 is the one request whose header has no client id.
        let client_id = if api_key == CONTROLLED_SHUTDOWN && api_version == 0 {
            None
        } else {
            r.nullable_string("client_id")?
        };
        Ok(RequestHeader {
            api_key,
            api_version,
            correlation_id,
            client_id,
        })
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_i16(self.api_key);
        out.put_i16(self.api_version);
        out.put_i32(self.correlation_id);
        out.put_nullable_string(self.client_id);
    }
}

/// Reads just the api key and version of a frame, for routing before the full parse.
pub fn peek_key_version(frame: &[u8]) -> Option<(i16, i16)> {
    let mut r = Reader::new(frame);
    Some((r.i16("api_key").ok()?, r.i16("api_version").ok()?))
}
