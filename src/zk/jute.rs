//! ZooKeeper's wire format (jute, as the server's `zookeeper.jute` defines it) for the
//! requests gregor sends, and the types callers see: `ZkError`, `Stat`, `WatchedEvent`.
//!
//! Every frame is a 4-byte big-endian length and a body. Integers are big-endian; a string or
//! a buffer is an i32 length (-1 for none) and its bytes; a vector is an i32 count and its
//! items.

use byteorder::{BigEndian, ByteOrder};

/// Operation codes (`ZooDefs.OpCode`).
pub(super) mod op {
    pub const CREATE: i32 = 1;
    pub const DELETE: i32 = 2;
    pub const EXISTS: i32 = 3;
    pub const GET_DATA: i32 = 4;
    pub const SET_DATA: i32 = 5;
    pub const GET_CHILDREN: i32 = 8;
    pub const PING: i32 = 11;
    pub const MULTI: i32 = 14;
    pub const MULTI_READ: i32 = 22;
    /// A multi's result for an operation that failed, or was undone with the one that did.
    pub const ERROR: i32 = -1;
    pub const CLOSE_SESSION: i32 = -11;
}

/// Reserved request ids: the server's notifications and ping answers carry these.
pub(super) const XID_NOTIFICATION: i32 = -1;
pub(super) const XID_PING: i32 = -2;

/// ZooKeeper's error codes (`KeeperException.Code`) and the client's own: `ConnectionLoss`
/// (no connection, or it broke before the answer came), `OperationTimeout` (no answer within
/// the request's deadline), `SessionExpired`, and `MarshallingError` (a frame or a node's
/// data that does not parse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZkError {
    SystemError,
    RuntimeInconsistency,
    DataInconsistency,
    ConnectionLoss,
    MarshallingError,
    Unimplemented,
    OperationTimeout,
    BadArguments,
    ApiError,
    NoNode,
    NoAuth,
    BadVersion,
    NoChildrenForEphemerals,
    NodeExists,
    NotEmpty,
    SessionExpired,
    InvalidCallback,
    InvalidAcl,
    AuthFailed,
    SessionMoved,
    NotReadOnly,
    /// A code this client does not know.
    Other(i32),
}

impl ZkError {
    pub fn from_code(code: i32) -> ZkError {
        match code {
            -1 => ZkError::SystemError,
            -2 => ZkError::RuntimeInconsistency,
            -3 => ZkError::DataInconsistency,
            -4 => ZkError::ConnectionLoss,
            -5 => ZkError::MarshallingError,
            -6 => ZkError::Unimplemented,
            -7 => ZkError::OperationTimeout,
            -8 => ZkError::BadArguments,
            -100 => ZkError::ApiError,
            -101 => ZkError::NoNode,
            -102 => ZkError::NoAuth,
            -103 => ZkError::BadVersion,
            -108 => ZkError::NoChildrenForEphemerals,
            -110 => ZkError::NodeExists,
            -111 => ZkError::NotEmpty,
            -112 => ZkError::SessionExpired,
            -113 => ZkError::InvalidCallback,
            -114 => ZkError::InvalidAcl,
            -115 => ZkError::AuthFailed,
            -118 => ZkError::SessionMoved,
            -119 => ZkError::NotReadOnly,
            c => ZkError::Other(c),
        }
    }
}

impl std::fmt::Display for ZkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for ZkError {}

pub type ZkResult<T> = Result<T, ZkError>;

/// A node's metadata (`data.Stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
    /// The session that owns an ephemeral node; 0 for a persistent one.
    pub ephemeral_owner: i64,
    pub data_length: i32,
    pub num_children: i32,
    pub pzxid: i64,
}

/// What a watch reports (`Watcher.Event.EventType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchedEventType {
    None,
    NodeCreated,
    NodeDeleted,
    NodeDataChanged,
    NodeChildrenChanged,
    Other(i32),
}

impl WatchedEventType {
    fn from_code(code: i32) -> WatchedEventType {
        match code {
            -1 => WatchedEventType::None,
            1 => WatchedEventType::NodeCreated,
            2 => WatchedEventType::NodeDeleted,
            3 => WatchedEventType::NodeDataChanged,
            4 => WatchedEventType::NodeChildrenChanged,
            c => WatchedEventType::Other(c),
        }
    }
}

/// A watch firing: what happened to which node (the path as the caller named it, without
/// the chroot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    pub event_type: WatchedEventType,
    pub path: String,
}

/// How a node is created (`CreateMode`): the flags of a create request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    Persistent = 0,
    Ephemeral = 1,
    PersistentSequential = 2,
    EphemeralSequential = 3,
}

/// Builds one request frame: the length is filled in by `finish`.
pub(super) struct Frame(Vec<u8>);

impl Frame {
    /// A request frame with its header (`RequestHeader`: xid, type).
    pub(super) fn request(xid: i32, op: i32) -> Frame {
        let mut f = Frame(Vec::with_capacity(64));
        f.i32(0);
        f.i32(xid);
        f.i32(op);
        f
    }

    /// A frame without a request header (the connect request).
    pub(super) fn bare() -> Frame {
        let mut f = Frame(Vec::with_capacity(64));
        f.i32(0);
        f
    }

    pub(super) fn i32(&mut self, v: i32) -> &mut Frame {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub(super) fn i64(&mut self, v: i64) -> &mut Frame {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub(super) fn bool(&mut self, v: bool) -> &mut Frame {
        self.0.push(u8::from(v));
        self
    }

    pub(super) fn bytes(&mut self, v: &[u8]) -> &mut Frame {
        self.i32(v.len() as i32);
        self.0.extend_from_slice(v);
        self
    }

    pub(super) fn string(&mut self, v: &str) -> &mut Frame {
        self.bytes(v.as_bytes())
    }

    /// The open ACL (`ZooDefs.Ids.OPEN_ACL_UNSAFE`: every permission to world:anyone), the
    /// only one gregor writes, as Kafka does without ZooKeeper security.
    pub(super) fn open_acl(&mut self) -> &mut Frame {
        const ALL_PERMS: i32 = 31;
        self.i32(1).i32(ALL_PERMS).string("world").string("anyone")
    }

    pub(super) fn finish(mut self) -> Vec<u8> {
        let len = (self.0.len() - 4) as i32;
        BigEndian::write_i32(&mut self.0[..4], len);
        self.0
    }
}

/// Reads a frame body; any read past its end is a `MarshallingError`.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    fn take(&mut self, n: usize) -> ZkResult<&'a [u8]> {
        if self.buf.len() < n {
            return Err(ZkError::MarshallingError);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    pub(super) fn i32(&mut self) -> ZkResult<i32> {
        self.take(4).map(BigEndian::read_i32)
    }

    pub(super) fn i64(&mut self) -> ZkResult<i64> {
        self.take(8).map(BigEndian::read_i64)
    }

    pub(super) fn bool(&mut self) -> ZkResult<bool> {
        self.take(1).map(|b| b[0] != 0)
    }

    /// A buffer; `None` for the absent one (length -1).
    pub(super) fn bytes(&mut self) -> ZkResult<Option<&'a [u8]>> {
        let len = self.i32()?;
        if len < 0 {
            return Ok(None);
        }
        self.take(len as usize).map(Some)
    }

    pub(super) fn string(&mut self) -> ZkResult<String> {
        let b = self.bytes()?.unwrap_or_default();
        String::from_utf8(b.to_vec()).map_err(|_| ZkError::MarshallingError)
    }

    pub(super) fn strings(&mut self) -> ZkResult<Vec<String>> {
        let n = self.i32()?.max(0) as usize;
        // Each string takes at least its 4-byte length: a count past that is a lie.
        if n > self.buf.len() / 4 {
            return Err(ZkError::MarshallingError);
        }
        (0..n).map(|_| self.string()).collect()
    }

    pub(super) fn stat(&mut self) -> ZkResult<Stat> {
        Ok(Stat {
            czxid: self.i64()?,
            mzxid: self.i64()?,
            ctime: self.i64()?,
            mtime: self.i64()?,
            version: self.i32()?,
            cversion: self.i32()?,
            aversion: self.i32()?,
            ephemeral_owner: self.i64()?,
            data_length: self.i32()?,
            num_children: self.i32()?,
            pzxid: self.i64()?,
        })
    }

    /// A notification's body (`WatcherEvent`: type, state, path).
    pub(super) fn watcher_event(&mut self) -> ZkResult<(WatchedEventType, String)> {
        let t = WatchedEventType::from_code(self.i32()?);
        let _state = self.i32()?;
        Ok((t, self.string()?))
    }
}

/// A reply's header (`ReplyHeader`: xid, zxid, err).
pub(super) struct ReplyHeader {
    pub xid: i32,
    pub zxid: i64,
    pub err: i32,
}

impl ReplyHeader {
    pub(super) fn read(r: &mut Reader<'_>) -> ZkResult<ReplyHeader> {
        Ok(ReplyHeader {
            xid: r.i32()?,
            zxid: r.i64()?,
            err: r.i32()?,
        })
    }
}

/// The server's answer to a connect request (`ConnectResponse`). A timeout of 0 means the
/// session asked for has expired.
pub(super) struct ConnectResponse {
    pub timeout_ms: i32,
    pub session_id: i64,
    pub passwd: Vec<u8>,
}

impl ConnectResponse {
    pub(super) fn read(r: &mut Reader<'_>) -> ZkResult<ConnectResponse> {
        let _protocol_version = r.i32()?;
        Ok(ConnectResponse {
            timeout_ms: r.i32()?,
            session_id: r.i64()?,
            passwd: r.bytes()?.unwrap_or_default().to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_carry_their_length_and_big_endian_fields() {
        let mut f = Frame::request(7, op::GET_DATA);
        f.string("/a").bool(true);
        let bytes = f.finish();
        assert_eq!(
            bytes,
            [
                0, 0, 0, 15, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0, 2, b'/', b'a', 1
            ]
        );
    }

    #[test]
    fn reads_past_the_end_are_marshalling_errors_not_panics() {
        let mut r = Reader::new(&[0, 0, 0, 9, b'x']);
        assert_eq!(r.string(), Err(ZkError::MarshallingError));
        let mut r = Reader::new(&[0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(r.strings(), Err(ZkError::MarshallingError));
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(r.bytes(), Ok(None));
        assert_eq!(Reader::new(&[1, 2]).stat(), Err(ZkError::MarshallingError));
    }

    #[test]
    fn error_codes_map_both_ways_for_the_ones_gregor_handles() {
        for (code, e) in [
            (-4, ZkError::ConnectionLoss),
            (-101, ZkError::NoNode),
            (-103, ZkError::BadVersion),
            (-110, ZkError::NodeExists),
            (-111, ZkError::NotEmpty),
            (-112, ZkError::SessionExpired),
            (-999, ZkError::Other(-999)),
        ] {
            assert_eq!(ZkError::from_code(code), e);
        }
    }
}
