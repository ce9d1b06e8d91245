//! Sockets: the broker's blocking `SocketServer` (one per listener) with the `ConnectionQuotas`
//! and `RequestPool` its listeners share, and the client-side `BlockingChannel`.

pub mod channel;
pub mod pool;
pub mod quotas;
pub mod response;
pub mod server;
pub mod tls;
pub mod transport;

pub use channel::{BlockingChannel, ChannelError, ClientSecurity};
pub use pool::RequestPool;
pub use quotas::{ConnectionLimits, ConnectionQuotas, Refusal, bytes_queued};
pub use response::{FileSlice, Response};
pub use server::{Action, ConnectionContext, ListenerSpec, RequestHandler, SocketServer};
