//! The `gregor` command.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "gregor",
    version,
    about = "A replicated, partitioned commit log in the style of Kafka 0.8"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a broker.
    Broker {
        /// A Kafka-style server.properties file.
        #[arg(long)]
        config: PathBuf,
        /// key=value that wins over the file; may be repeated.
        #[arg(long = "override", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
    },
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    match cli.command {
        Command::Broker { config, overrides } => run_broker(&config, &overrides),
    }
}

fn run_broker(config: &std::path::Path, overrides: &[String]) -> ExitCode {
    let cfg = match gregor::config::BrokerConfig::from_file(config, overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gregor broker: {e}");
            return ExitCode::from(2);
        }
    };
    let (tx, rx) = crossbeam_channel::bounded(1);
    if let Err(e) = install_signal_handlers(tx) {
        eprintln!("gregor broker: cannot install signal handlers: {e}");
        return ExitCode::FAILURE;
    }
    let broker = match gregor::broker::Broker::start(cfg) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("gregor broker: {e}");
            return ExitCode::FAILURE;
        }
    };
    let _ = rx.recv();
    broker.shutdown();
    ExitCode::SUCCESS
}

/// SIGTERM and SIGINT send on `tx`; the main thread then shuts the broker down cleanly.
fn install_signal_handlers(tx: crossbeam_channel::Sender<()>) -> std::io::Result<()> {
    signal::install(tx)
}

mod signal {
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
