//! The crate's layers point downward only: each module of `src/` uses only modules below it
//! in `LAYERS` (as `crate::…` or, in the binary's `cli`, `gregor::…`). Shared types live in the
//! lowest layer that needs them — a record batch's producer ranges and a file slice in
//! `protocol`, ZooKeeper admin operations in `zk` — and no server module calls `client`.

use std::path::{Path, PathBuf};

/// Lowest first.
const LAYERS: &[&str] = &[
    "protocol",
    "security",
    "metrics",
    "network",
    "config",
    "zk",
    "log",
    "controller",
    "coordinator",
    "broker",
    "client",
    "cli",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module a file of `src/` belongs to: `src/log/read.rs` and `src/log.rs` are `log`.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let first = file.strip_prefix(src).ok()?.components().next()?;
    let name = first.as_os_str().to_str()?;
    Some(name.trim_end_matches(".rs").to_owned())
}

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == module)
}

#[test]
fn modules_use_only_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for f in &files {
        let Some(module) = module_of(&src, f) else {
            continue;
        };
        if module == "lib" || module == "main" {
            continue;
        }
        let mine = rank(&module).unwrap_or_else(|| panic!("{module} is not in LAYERS"));
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            for prefix in ["crate::", "gregor::"] {
                for (at, _) in line.match_indices(prefix) {
                    let used: String = line[at + prefix.len()..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if let Some(theirs) = rank(&used)
                        && theirs > mine
                    {
                        let path = f.strip_prefix(&src).unwrap().display();
                        wrong.push(format!("src/{path}:{}: {module} uses {used}", n + 1));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "upward uses:\n{}", wrong.join("\n"));
}
