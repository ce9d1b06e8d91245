//! `gregor broker`: run a broker until SIGTERM or Ctrl-C, then shut down cleanly.

use std::path::PathBuf;

use clap::Args;

use gregor::broker::Broker;
use gregor::config::BrokerConfig;

#[derive(Args)]
pub struct BrokerArgs {
    /// A Kafka-style server.properties file.
    #[arg(long)]
    config: PathBuf,
    /// key=value that wins over the file; may be repeated.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

pub fn run(a: BrokerArgs) -> Result<(), String> {
    let cfg = BrokerConfig::from_file(&a.config, &a.overrides).map_err(|e| e.to_string())?;
    let (tx, rx) = crossbeam_channel::bounded(1);
    signal::install(tx).map_err(|e| format!("cannot install signal handlers: {e}"))?;
    raise_open_files_limit();
    let broker = Broker::start(cfg).map_err(|e| e.to_string())?;
    let _ = rx.recv();
    broker.shutdown();
    Ok(())
}

/// The open files a broker asks for: each partition keeps three (log, offset index, time
/// index) and each connection one, so thousands of partitions need far more than the usual
/// soft limit of 1,024.
const WANTED_OPEN_FILES: libc::rlim_t = 1 << 20;

/// Raises this process's open files limit as the JVM does for Kafka (the soft limit up to the
/// hard one), and the hard one too where the process may (root). Warns when what it got is
/// low for a broker.
fn raise_open_files_limit() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct that lives across the calls.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
            return;
        }
        let wanted = libc::rlimit {
            rlim_cur: WANTED_OPEN_FILES.max(l.rlim_cur),
            rlim_max: WANTED_OPEN_FILES.max(l.rlim_max),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) != 0 {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
    }
    // A written partition keeps 3 files open, an empty one 1.
    if l.rlim_cur < 4096 {
        log::warn!(
            "open files limit is {}: this broker can hold about {} written partitions (raise it with ulimit -n)",
            l.rlim_cur,
            l.rlim_cur / 3
        );
    } else {
        log::info!(
            "open files limit {} (about {} written partitions)",
            l.rlim_cur,
            l.rlim_cur / 3
        );
    }
}

/// SIGTERM and SIGINT wake the main thread, which then shuts the broker down.
pub mod signal {
    use std::sync::OnceLock;

    static PIPE_WRITE: OnceLock<i32> = OnceLock::new();

    extern "C" fn on_signal(_: libc::c_int) {
        // Only async-signal-safe work here: one write to a pipe.
        if let Some(fd) = PIPE_WRITE.get() {
            let b = [1u8];
            // SAFETY: write(2) on a valid fd with a 1-byte buffer is async-signal-safe.
            unsafe { libc::write(*fd, b.as_ptr().cast(), 1) };
        }
    }

    pub fn install(tx: crossbeam_channel::Sender<()>) -> std::io::Result<()> {
        let mut fds = [0i32; 2];
        // SAFETY: pipe(2) fills the two-element array we pass.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let _ = PIPE_WRITE.set(fds[1]);
        for sig in [libc::SIGTERM, libc::SIGINT] {
            // SAFETY: installing a handler that only calls write(2).
            unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
        }
        let read_fd = fds[0];
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let mut b = [0u8; 1];
                // SAFETY: read(2) into a 1-byte buffer from the pipe we created.
                let n = unsafe { libc::read(read_fd, b.as_mut_ptr().cast(), 1) };
                if n > 0 {
                    log::info!("signal received; shutting down");
                    let _ = tx.send(());
                }
            })?;
        Ok(())
    }
}
