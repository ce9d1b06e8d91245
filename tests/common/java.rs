//! The official Java client in tests: the jars scripts/test.sh installs under
//! `target/java-clients` (from Maven Central, by `tests/clients/java/pom.xml`) and a JDK.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::run_with_deadline;

/// The client's own jar; the others (codecs, slf4j) are whatever its pom brought beside it.
const CLIENT_JAR: &str = "kafka-clients-4.3.0.jar";

/// A program of `tests/clients/java/` compiled against the client.
pub struct JavaProgram {
    classpath: String,
    class: String,
    _classes: tempfile::TempDir,
}

impl JavaProgram {
    /// A program of `tests/clients/java/` against the Java client of `target/java-clients`.
    pub fn compile(class: &str) -> JavaProgram {
        Self::compile_against(
            "tests/clients/java",
            "target/java-clients",
            CLIENT_JAR,
            class,
        )
    }

    /// `class` of the sources in `src_dir` against the jars in `jars_dir` (paths in the
    /// repository), which `marker_jar` shows scripts/test.sh installed.
    pub fn compile_against(
        src_dir: &str,
        jars_dir: &str,
        marker_jar: &str,
        class: &str,
    ) -> JavaProgram {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(jars_dir);
        assert!(
            dir.join(marker_jar).exists(),
            "{marker_jar} is missing from {}: scripts/test.sh installs it",
            dir.display()
        );
        let jars = format!("{}/*", dir.display());
        let classes = tempfile::tempdir().unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(src_dir)
            .join(format!("{class}.java"));
        let (ok, _, err) = run_with_deadline(
            Command::new("javac")
                .args(["-cp", &jars, "-d"])
                .arg(classes.path())
                .arg(src),
            "",
            Duration::from_secs(120),
        );
        assert!(ok, "javac failed: {err}");
        JavaProgram {
            classpath: format!("{jars}:{}", classes.path().display()),
            class: class.to_owned(),
            _classes: classes,
        }
    }

    /// Runs it with `args` under a deadline: (success, stdout, stderr).
    pub fn run(&self, args: &[&str], limit: Duration) -> (bool, String, String) {
        run_with_deadline(&mut self.command(args), "", limit)
    }

    /// The command that runs it, for a test that talks to it while it runs.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("java");
        cmd.args(["-cp", &self.classpath, &self.class]).args(args);
        cmd
    }
}

/// The command that runs `class` of Apache Kafka 4.4's own tools (`org.apache.kafka.tools.…`)
/// with the jars scripts/test.sh installs under `target/kafka-tools` (tests/clients/kafka-tools).
pub fn kafka_tool(class: &str) -> Command {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/kafka-tools");
    assert!(
        dir.join("kafka-tools-4.4.0.jar").exists(),
        "Apache Kafka's tools are missing from {}: scripts/test.sh installs them",
        dir.display()
    );
    let mut cmd = Command::new("java");
    cmd.arg("-cp")
        .arg(format!("{}/*", dir.display()))
        .arg(class);
    cmd
}

/// Runs Kafka's tool `class` against `bootstrap` with `args` (each tool takes
/// `--bootstrap-server`), under a deadline: (success, stdout, stderr).
pub fn run_kafka_tool(class: &str, bootstrap: &str, args: &[&str]) -> (bool, String, String) {
    let mut cmd = kafka_tool(class);
    cmd.args(["--bootstrap-server", bootstrap]).args(args);
    run_with_deadline(&mut cmd, "", Duration::from_secs(120))
}
