//! The `zk-io` thread's reading side: frames as they arrive, answers matched to their calls,
//! watches fired, pings when idle, and a silent connection declared dead.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::super::jute::{
    Frame, Reader, ReplyHeader, WatchedEvent, WatchedEventType, XID_NOTIFICATION, XID_PING,
    ZkError, ZkResult, op,
};
use super::{MAX_FRAME, Shared, WatchKind};

impl Shared {
    /// Reads frames until the connection dies: nothing for two thirds of the session timeout,
    /// an error, or the close. Pings when idle for a third of it.
    pub(super) fn serve(
        &self,
        mut stream: TcpStream,
        negotiated: Duration,
        last_contact: &mut Instant,
    ) {
        let ping_every = negotiated / 3;
        let dead_after = negotiated * 2 / 3;
        let _ = stream.set_read_timeout(Some((ping_every / 2).max(Duration::from_millis(10))));
        *last_contact = Instant::now();
        let mut buf = Vec::with_capacity(64 << 10);
        let mut chunk = vec![0u8; 64 << 10];
        loop {
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            match stream.read(&mut chunk) {
                Ok(0) => return,
                Ok(_) if last_contact.elapsed() > self.session_timeout => {
                    // We were not reading for longer than the session lasts (a paused
                    // process): the ensemble has expired the session, whatever was still
                    // queued for us. Dropped, so the owner hears of the loss before it acts
                    // on this session again. A shorter pause keeps the connection: the data
                    // shows the server still serves the session.
                    log::warn!(
                        "zookeeper read {:?} after the last one; dropping the connection",
                        last_contact.elapsed()
                    );
                    return;
                }
                Ok(n) => {
                    *last_contact = Instant::now();
                    buf.extend_from_slice(&chunk[..n]);
                    if self.dispatch_frames(&mut buf).is_err() {
                        log::warn!("zookeeper sent a frame that does not parse; reconnecting");
                        return;
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return,
            }
            if last_contact.elapsed() > dead_after {
                log::warn!(
                    "zookeeper silent for {:?}; dropping the connection",
                    last_contact.elapsed()
                );
                return;
            }
            self.ping_if_idle(ping_every);
        }
    }

    fn ping_if_idle(&self, ping_every: Duration) {
        let mut conn = self.conn.lock();
        if conn.last_sent.elapsed() < ping_every {
            return;
        }
        let ping = Frame::request(XID_PING, op::PING).finish();
        if let Some(stream) = &conn.stream
            && (&mut &*stream).write_all(&ping).is_err()
        {
            let _ = stream.shutdown(Shutdown::Both);
        }
        conn.last_sent = Instant::now();
    }

    /// Handles every whole frame at the front of `buf`, leaving a partial one.
    fn dispatch_frames(&self, buf: &mut Vec<u8>) -> ZkResult<()> {
        let mut at = 0;
        while buf.len() - at >= 4 {
            let len = i32::from_be_bytes(buf[at..at + 4].try_into().expect("4 bytes"));
            if len < 16 || len as usize > MAX_FRAME {
                return Err(ZkError::MarshallingError);
            }
            let end = at + 4 + len as usize;
            if buf.len() < end {
                break;
            }
            self.dispatch(&buf[at + 4..end])?;
            at = end;
        }
        buf.drain(..at);
        Ok(())
    }

    fn dispatch(&self, frame: &[u8]) -> ZkResult<()> {
        let mut r = Reader::new(frame);
        let h = ReplyHeader::read(&mut r)?;
        match h.xid {
            XID_PING => return Ok(()),
            XID_NOTIFICATION => return self.notify(&mut r),
            _ => {}
        }
        if h.zxid > 0 {
            let mut z = self.last_zxid.lock();
            *z = (*z).max(h.zxid);
        }
        let Some(p) = self.pending.lock().remove(&h.xid) else {
            return Ok(()); // its caller gave up at its deadline
        };
        let err = ZkError::from_code(h.err);
        if let Some((kind, path, w)) = p.watch
            && (h.err == 0 || (err == ZkError::NoNode && kind == WatchKind::Data))
        {
            self.watches.lock().entry((kind, path)).or_default().push(w);
        }
        let answer = if h.err == 0 {
            Ok(frame[16..].to_vec())
        } else {
            Err(err)
        };
        let _ = p.answer.send(answer);
        Ok(())
    }

    /// A watch fired: hands its watchers (which fire once) to the watcher thread.
    fn notify(&self, r: &mut Reader<'_>) -> ZkResult<()> {
        let (event_type, server_path) = r.watcher_event()?;
        let path = self.strip_chroot(&server_path);
        let kinds: &[WatchKind] = match event_type {
            WatchedEventType::NodeCreated | WatchedEventType::NodeDataChanged => &[WatchKind::Data],
            WatchedEventType::NodeDeleted => &[WatchKind::Data, WatchKind::Child],
            WatchedEventType::NodeChildrenChanged => &[WatchKind::Child],
            _ => &[],
        };
        let mut fired = Vec::new();
        {
            let mut watches = self.watches.lock();
            for k in kinds {
                fired.extend(watches.remove(&(*k, path.clone())).unwrap_or_default());
            }
        }
        for w in fired {
            let event = WatchedEvent {
                event_type,
                path: path.clone(),
            };
            let _ = self.fire.send((w, event));
        }
        Ok(())
    }
}

pub(super) fn read_frame(stream: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let len = i32::from_be_bytes(len);
    if len < 0 || len as usize > MAX_FRAME {
        return Err(std::io::Error::other(format!("frame of {len} bytes")));
    }
    let mut body = vec![0u8; len as usize];
    stream.read_exact(&mut body)?;
    Ok(body)
}
