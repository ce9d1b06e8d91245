//! A stretch of a segment file that an answer carries as it lies on disk: the log hands it
//! out (`log::read`) and the socket server sends it with `sendfile(2)` (`network::Response`),
//! so record bytes a consumer fetches never pass through the broker's memory.

use std::os::fd::AsRawFd;
use std::sync::Arc;

/// `len` bytes of a file from `pos`; `file` keeps the descriptor open until they are sent
/// (a segment deleted meanwhile stays readable through it).
#[derive(Clone)]
pub struct FileSlice {
    pub file: Arc<dyn AsRawFd + Send + Sync>,
    pub pos: u64,
    pub len: usize,
}

impl std::fmt::Debug for FileSlice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FileSlice(fd {}, {}+{})",
            self.file.as_raw_fd(),
            self.pos,
            self.len
        )
    }
}
