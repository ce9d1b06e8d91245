//! The operations gregor asks of ZooKeeper, as calls on a `Session`: each builds its request
//! (`zookeeper.jute`'s `CreateRequest`, `GetDataRequest`, ...) and reads its response.

use super::jute::{CreateMode, Reader, Stat, ZkError, ZkResult, op};
use super::session::{Session, WatchKind, Watcher};

impl Session {
    /// A read that may set a watch of `kind` on `path` (exists, getData, getChildren): the
    /// request is the path and whether to watch.
    fn read(
        &self,
        op: i32,
        path: &str,
        kind: WatchKind,
        watch: Option<Watcher>,
    ) -> ZkResult<Vec<u8>> {
        let server = self.server_path(path);
        let set = watch.is_some();
        let watch = watch.map(|w| (kind, server.clone(), w));
        self.call(
            op,
            |f| {
                f.string(&server).bool(set);
            },
            watch,
        )
    }

    /// Creates `path`; returns the path created (a sequential node's has its number).
    pub fn create(&self, path: &str, data: &[u8], mode: CreateMode) -> ZkResult<String> {
        let server = self.server_path(path);
        let body = self.call(
            op::CREATE,
            |f| {
                f.string(&server).bytes(data).open_acl().i32(mode as i32);
            },
            None,
        )?;
        Ok(self.client_path(&Reader::new(&body).string()?))
    }

    /// Deletes `path` at `version` (any version when `None`).
    pub fn delete(&self, path: &str, version: Option<i32>) -> ZkResult<()> {
        let server = self.server_path(path);
        self.call(
            op::DELETE,
            |f| {
                f.string(&server).i32(version.unwrap_or(-1));
            },
            None,
        )
        .map(|_| ())
    }

    /// The node's metadata, `None` when it does not exist. `watch` is called once when it is
    /// created, changed or deleted.
    pub fn exists(&self, path: &str, watch: Option<Watcher>) -> ZkResult<Option<Stat>> {
        match self.read(op::EXISTS, path, WatchKind::Data, watch) {
            Ok(body) => Reader::new(&body).stat().map(Some),
            Err(ZkError::NoNode) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The node's data. `watch` is called once when it changes or is deleted.
    pub fn get_data(&self, path: &str, watch: Option<Watcher>) -> ZkResult<(Vec<u8>, Stat)> {
        let body = self.read(op::GET_DATA, path, WatchKind::Data, watch)?;
        let mut r = Reader::new(&body);
        let data = r.bytes()?.unwrap_or_default().to_vec();
        Ok((data, r.stat()?))
    }

    /// Writes `data` at `version` (any version when `None`).
    pub fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> ZkResult<Stat> {
        let server = self.server_path(path);
        let body = self.call(
            op::SET_DATA,
            |f| {
                f.string(&server).bytes(data).i32(version.unwrap_or(-1));
            },
            None,
        )?;
        Reader::new(&body).stat()
    }

    /// The node's children. `watch` is called once when a child comes or goes, or the node
    /// is deleted.
    pub fn get_children(&self, path: &str, watch: Option<Watcher>) -> ZkResult<Vec<String>> {
        let body = self.read(op::GET_CHILDREN, path, WatchKind::Child, watch)?;
        Reader::new(&body).strings()
    }
}
