//! The `gregor` command.

mod cli;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

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
    Broker(cli::broker::BrokerArgs),
    /// Create, delete, list and describe topics; request preferred-replica elections.
    Topics(cli::topics::TopicsArgs),
    /// Move partitions to other brokers (--execute FILE) and check progress (--verify FILE).
    Reassign(cli::topics::ReassignArgs),
    /// Send lines from stdin as messages.
    Produce(cli::console::ProduceArgs),
    /// Print messages of a topic, or of a group's share of topics (--group).
    Consume(cli::consume::ConsumeArgs),
    /// List consumer groups, or describe one: members, owners, committed offsets, lag.
    Groups(cli::groups::GroupsArgs),
    /// Brokers, controller, topics and partitions with leader and ISR.
    Status(cli::console::StatusArgs),
    /// Set, remove and describe client quotas and SCRAM users (kafka-configs.sh).
    Configs(cli::configs::ConfigsArgs),
    /// Add, remove and list ACLs (kafka-acls.sh).
    Acls(cli::acls::AclsArgs),
    /// List and describe transactions, abort a hanging one (kafka-transactions.sh).
    Transactions(cli::transactions::TransactionsArgs),
    /// Measure produce or consume throughput and latency.
    #[command(subcommand)]
    Perf(cli::perf::PerfCommand),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            e.exit()
        }
        Err(e) => {
            eprintln!("{}", usage_error(&e));
            return ExitCode::from(2);
        }
    };
    // A broker logs its work; the tools only their warnings (RUST_LOG overrides).
    let default = match cli.command {
        Command::Broker(_) => "info",
        _ => "warn",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default))
        .format_timestamp_millis()
        .init();
    if !matches!(cli.command, Command::Broker(_)) {
        // A tool whose output is piped into `head` or `grep -q` ends quietly, as Unix tools do.
        // SAFETY: restoring the default disposition of SIGPIPE before any thread is started.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let (name, result) = match cli.command {
        Command::Broker(a) => ("broker", cli::broker::run(a)),
        Command::Topics(a) => ("topics", cli::topics::run_topics(a)),
        Command::Reassign(a) => ("reassign", cli::topics::run_reassign(a)),
        Command::Perf(c) => ("perf", cli::perf::run(c)),
        Command::Produce(a) => ("produce", cli::console::produce(a)),
        Command::Consume(a) => ("consume", cli::consume::consume(a)),
        Command::Status(a) => ("status", cli::console::status(a)),
        Command::Groups(a) => ("groups", cli::groups::run(a)),
        Command::Transactions(a) => ("transactions", cli::transactions::run(a)),
        Command::Configs(a) => ("configs", cli::configs::run(a)),
        Command::Acls(a) => ("acls", cli::acls::run(a)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gregor {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A command-line mistake in the one-line form of every other failure,
/// `gregor SUBCOMMAND: reason`, instead of clap's multi-line report (--help and --version
/// still print in full).
fn usage_error(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let reason: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.starts_with("Usage:"))
        .map(|l| l.trim().trim_start_matches("error: "))
        .filter(|l| !l.is_empty() && !l.starts_with("tip:") && !l.starts_with("For more"))
        .collect();
    let known = |s: &String| Cli::command().find_subcommand(s).is_some();
    let sub = std::env::args().nth(1).filter(known);
    let sub = sub.map_or(String::new(), |s| format!(" {s}"));
    format!(
        "gregor{sub}: {} (see `gregor{sub} --help`)",
        reason.join(" ")
    )
}
