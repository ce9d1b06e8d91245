//! The `metrics.listener` endpoint: `GET /metrics` answers the registry in the Prometheus
//! text format; nothing else is served. `tiny_http` is blocking and thread-based, as the rest
//! of the broker: one thread takes scrapes one after another (a scrape takes milliseconds;
//! Prometheus scrapes every few seconds at most).

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::Mutex;
use tiny_http::{Header, Method, Response, Server};

/// The Prometheus text format's content type.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

pub struct MetricsServer {
    server: Arc<Server>,
    addr: SocketAddr,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl MetricsServer {
    /// Listens on `addr` (`host:port`) and answers each scrape with what `render` gives.
    pub fn start(
        addr: &str,
        broker_id: i32,
        render: impl Fn() -> String + Send + 'static,
    ) -> Result<MetricsServer, String> {
        let server = Server::http(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let bound = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| format!("{addr} is not an IP address"))?;
        let server = Arc::new(server);
        let s = server.clone();
        let thread = std::thread::Builder::new()
            .name(format!("metrics-{broker_id}"))
            .spawn(move || serve(&s, &render))
            .map_err(|e| format!("cannot start the metrics thread: {e}"))?;
        log::info!("[Broker {broker_id}] metrics at http://{bound}/metrics");
        Ok(MetricsServer {
            server,
            addr: bound,
            thread: Mutex::new(Some(thread)),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn shutdown(&self) {
        self.server.unblock();
        if let Some(h) = self.thread.lock().take() {
            let _ = h.join();
        }
    }
}

fn serve(server: &Server, render: &dyn Fn() -> String) {
    for req in server.incoming_requests() {
        let path = req.url().split('?').next().unwrap_or_default();
        let answer = match (req.method(), path) {
            (Method::Get, "/metrics") => Response::from_string(render()).with_header(
                Header::from_bytes("Content-Type", TEXT_FORMAT).expect("valid header"),
            ),
            (Method::Get, _) => {
                Response::from_string("not found: metrics are at /metrics\n").with_status_code(404)
            }
            _ => Response::from_string("only GET /metrics is served\n").with_status_code(405),
        };
        if let Err(e) = req.respond(answer) {
            log::debug!("metrics answer not sent: {e}");
        }
    }
}
