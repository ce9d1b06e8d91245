//! The README as a newcomer follows it: every `gregor` command in its code blocks names a
//! subcommand and flags the binary has (each checked against its `--help`), every script it
//! runs exists and knows the command given, and no link in the README or `doc/` points
//! outside the repository.

mod common;

use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The shell commands of the README's code blocks: in a block with `$ ` prompts only the
/// prompted lines (the rest is output), in others every line; `\` continuations joined,
/// pipelines split, comments cut.
fn commands(readme: &str) -> Vec<String> {
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in readme.lines() {
        if line.starts_with("```") {
            match current.take() {
                Some(b) => blocks.push(b),
                None => current = Some(Vec::new()),
            }
        } else if let Some(b) = current.as_mut() {
            b.push(line);
        }
    }
    let mut out = Vec::new();
    for block in blocks {
        let prompted = block.iter().any(|l| l.starts_with("$ "));
        let mut pending = String::new();
        for line in block {
            let line = match (prompted, line.strip_prefix("$ ")) {
                (true, Some(l)) => l,
                (true, None) if pending.is_empty() => continue,
                _ => line,
            };
            let line = line.find("  #").map_or(line, |i| &line[..i]);
            if let Some(head) = line.trim_end().strip_suffix('\\') {
                pending.push_str(head);
                continue;
            }
            pending.push_str(line);
            for part in pending.split(" | ") {
                let part = part.trim();
                if part.starts_with("gregor ") || part.starts_with("scripts/") {
                    out.push(part.to_owned());
                }
            }
            pending.clear();
        }
    }
    out
}

fn gregor_help(args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.push("--help");
    let (ok, out, err) = common::gregor_cli(&all, "");
    assert!(ok, "gregor {args:?} --help failed: {err}");
    out
}

#[test]
fn every_readme_command_exists_with_its_flags() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let cmds = commands(&readme);
    assert!(cmds.len() >= 20, "too few commands found: {cmds:?}");
    for cmd in &cmds {
        let words: Vec<&str> = cmd
            .split_whitespace()
            .take_while(|w| !matches!(*w, ">" | "&&") && !w.starts_with('<'))
            .collect();
        if words[0] == "gregor" {
            // `gregor perf produce`: a subcommand of a subcommand.
            let depth = if words[1] == "perf" { 3 } else { 2 };
            let help = gregor_help(&words[1..depth]);
            for flag in words.iter().filter(|w| w.starts_with("--")) {
                let flag = flag.split('=').next().unwrap();
                assert!(
                    help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
                    "README: `{cmd}`: `{flag}` is not in `gregor {} --help`",
                    words[1..depth].join(" ")
                );
            }
        } else {
            let script = Path::new(ROOT).join(words[0]);
            let text = std::fs::read_to_string(&script)
                .unwrap_or_else(|e| panic!("README: `{cmd}`: {}: {e}", script.display()));
            if let Some(sub) = words.get(1).filter(|w| !w.starts_with('-')) {
                assert!(
                    text.contains(&format!("{sub})")) || text.contains(&format!("{sub}|")),
                    "README: `{cmd}`: {} has no `{sub}` command",
                    words[0]
                );
            }
        }
    }
}

/// Markdown link targets of a file: `](target)`.
fn links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|t| t.split('#').next().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn no_link_points_outside_the_repository() {
    let mut files = vec![Path::new(ROOT).join("README.md")];
    for e in std::fs::read_dir(Path::new(ROOT).join("doc")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    let root = Path::new(ROOT).canonicalize().unwrap();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(
            !text.contains("../shared"),
            "{} points at ../shared, which a clone does not have",
            f.display()
        );
        for target in links(&text) {
            if target.is_empty() || target.starts_with("https://") || target.starts_with("http://")
            {
                continue;
            }
            let path = f.parent().unwrap().join(&target);
            let resolved = path
                .canonicalize()
                .unwrap_or_else(|e| panic!("{}: link `{target}`: {e}", f.display()));
            assert!(
                resolved.starts_with(&root),
                "{}: link `{target}` leaves the repository",
                f.display()
            );
        }
    }
}

/// The README's table of configuration keys is `config::keys` rendered, so the two cannot
/// drift; `GREGOR_UPDATE_README=1` writes the table afresh.
#[test]
fn the_configuration_table_is_the_key_table() {
    const BEGIN: &str = "<!-- config-keys:";
    const END: &str = "<!-- end config-keys -->";
    let path = Path::new(ROOT).join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = readme
        .find(BEGIN)
        .expect("README has the config-keys marker");
    let start = start + readme[start..].find('\n').unwrap() + 1;
    let end = readme
        .find(END)
        .expect("README has the end config-keys marker");
    let want = gregor::config::keys::markdown_table();
    if std::env::var("GREGOR_UPDATE_README").as_deref() == Ok("1") {
        let updated = format!("{}{want}{}", &readme[..start], &readme[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert!(
        readme[start..end] == want,
        "README's configuration table differs from src/config/keys.rs; \
         run GREGOR_UPDATE_README=1 cargo test --test readme to write it"
    );
}

/// `doc/protocol.md`'s table of APIs gives each the versions of the API table
/// (`header::SUPPORTED_APIS`), and its list of first flexible versions is the table's, so the
/// reader's page cannot drift from what the broker serves.
#[test]
fn the_protocol_page_lists_the_versions_of_the_api_table() {
    use gregor::protocol::header::{NEVER, SUPPORTED_APIS};
    let page = std::fs::read_to_string(Path::new(ROOT).join("doc/protocol.md")).unwrap();
    for api in SUPPORTED_APIS {
        let versions = if api.min == api.max {
            api.min.to_string()
        } else {
            format!("{}–{}", api.min, api.max)
        };
        let row = format!("| {} | {} | {versions} |", api.key, api.name);
        assert!(page.contains(&row), "doc/protocol.md has no row `{row}`");
    }
    let start = page
        .find("Flexible versions (KIP-482")
        .expect("the flexible list");
    let list: String = page[start..]
        .split_once(": ")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(l, _)| l.replace('\n', " "))
        .expect("the flexible list's parenthesis");
    let listed: std::collections::BTreeSet<String> =
        list.split(", ").map(|s| s.trim().to_owned()).collect();
    let want: std::collections::BTreeSet<String> = SUPPORTED_APIS
        .iter()
        .filter(|a| a.first_flexible != NEVER)
        .map(|a| format!("{} {}", a.name, a.first_flexible))
        .collect();
    assert_eq!(listed, want, "doc/protocol.md's flexible versions");
}
