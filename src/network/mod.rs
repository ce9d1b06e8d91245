//! Sockets: the broker's blocking `SocketServer` and the client-side `BlockingChannel`.

pub mod channel;
pub mod server;

pub use channel::{BlockingChannel, ChannelError};
pub use server::{Action, RequestHandler, SocketServer};
