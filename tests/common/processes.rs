//! Child processes of a test: the gregor tools, Python and kcat, all under deadlines, and
//! children that die with the test.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::*;

/// Sets PR_SET_PDEATHSIG so a child dies with the thread that started it.
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe and touches only the child's own state.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// A field of `/proc/<pid>/status` in kB (VmRSS, VmHWM) or as a count (Threads).
pub fn proc_status(pid: i32, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Waits up to `limit` for `child` to exit, then kills it; reaps it either way.
pub fn exit_or_kill(child: &mut Child, limit: Duration) {
    poll_until(limit, Duration::from_millis(20), || {
        child.try_wait().ok().flatten().is_some()
    });
    let _ = child.kill();
    let _ = child.wait();
}

/// Writes `line` to the child's stdin (its cue to finish), then `exit_or_kill`.
pub fn tell_and_wait(child: &mut Child, line: &[u8], limit: Duration) {
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(line);
    }
    exit_or_kill(child, limit);
}

/// (partition, committed offset) of a group's partitions of `topic`, from the rows of `gregor
/// groups --describe` (TOPIC PARTITION COMMITTED LOG-END LAG OWNER), as an operator reads
/// them; nothing where it cannot answer. Either kind of group.
pub fn committed_offsets(bootstrap: &str, group: &str, topic: &str) -> Vec<(i32, i64)> {
    let out = Command::new(env!("CARGO_BIN_EXE_gregor"))
        .args(["groups", "--bootstrap", bootstrap, "--describe", group])
        .output();
    let Ok(out) = out else { return Vec::new() };
    parse_committed_offsets(&String::from_utf8_lossy(&out.stdout), topic)
}

pub fn parse_committed_offsets(text: &str, topic: &str) -> Vec<(i32, i64)> {
    text.lines()
        .filter_map(|l| {
            let mut cols = l.split_whitespace();
            (cols.next() == Some(topic)).then_some(())?;
            let p = cols.next()?.parse().ok()?;
            let committed = cols.next()?.parse().ok()?;
            Some((p, committed))
        })
        .collect()
}

/// Runs a command with `stdin`, killing it if it has not finished within `limit`; returns
/// (success, stdout, stderr). A test that runs a tool never hangs on it.
pub fn run_with_deadline(
    cmd: &mut Command,
    stdin: &str,
    limit: Duration,
) -> (bool, String, String) {
    use std::io::Write as _;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn command");
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.success(),
        out_reader.join().unwrap(),
        err_reader.join().unwrap(),
    )
}

/// Runs the built `gregor` with `stdin`, under a deadline: (success, stdout, stderr).
pub fn gregor_cli(args: &[&str], stdin: &str) -> (bool, String, String) {
    run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_gregor")).args(args),
        stdin,
        Duration::from_secs(60),
    )
}

/// Runs `gregor args` with `stdin`, asserts it succeeds, and returns its stdout.
pub fn gregor_ok(args: &[&str], stdin: &str) -> String {
    let (ok, out, err) = gregor_cli(args, stdin);
    assert!(ok, "{args:?} failed: {err}");
    out
}

/// Asserts that `gregor args` fails with a message containing `want` on stderr.
pub fn assert_cli_fails(args: &[&str], want: &str) {
    let (ok, _, err) = gregor_cli(args, "x\n");
    assert!(!ok, "{args:?} should fail");
    assert!(err.contains(want), "{args:?}: expected `{want}` in `{err}`");
}

/// The python of the virtual environment scripts/test.sh makes under `target/python-venv`,
/// with the Python clients (kafka-python, confluent-kafka, aiokafka) installed in it.
pub fn python() -> Command {
    Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/target/python-venv/bin/python"
    ))
}

/// Runs kcat (installed by scripts/test.sh) under a deadline and returns its stdout.
pub fn kcat(args: &[&str], stdin: &str) -> String {
    let (ok, out, err) = run_with_deadline(
        Command::new("kcat").args(args),
        stdin,
        Duration::from_secs(60),
    );
    assert!(ok, "kcat {args:?} failed: {err}");
    out
}
