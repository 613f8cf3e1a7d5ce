//! Rendering of `compile --check`: per-file changes, diffs, the command that fixes them.

use super::Format;
use crate::output::check::{ChangeKind, FileDrift};
use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum DiffMode {
    /// Only the list of changed files
    None,
    /// The list with added/removed line counts
    Stat,
    /// The list and a unified diff of each file
    Full,
}

fn word(k: ChangeKind) -> &'static str {
    match k {
        ChangeKind::Create => "create",
        ChangeKind::Update => "update",
        ChangeKind::Delete => "delete",
    }
}

/// What answered a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// `clawc.lock` (hashes only); `rehashed` files were read and hashed, the others were
    /// vouched for by the stat record.
    Lock { rehashed: usize },
    /// A compile and a comparison with the tree.
    Compile,
}

/// Prints the drift report. Colour only when stdout is a terminal (and NO_COLOR unset).
/// `exit_code` is the one the process exits with, and the JSON document says it.
pub(super) fn print(
    drift: &[FileDrift],
    mode: DiffMode,
    fix: &str,
    format: Format,
    diagnostics: Vec<serde_json::Value>,
    answered_by: Answer,
    exit_code: i32,
) {
    let failed = diagnostics.iter().any(|d| d["severity"] == "error");
    if format == Format::Json {
        let files: Vec<serde_json::Value> = drift
            .iter()
            .map(|f| {
                let (added, removed) = f.stat();
                let mut v = serde_json::json!({ "path": f.path, "change": word(f.kind), "added": added, "removed": removed });
                if mode == DiffMode::Full {
                    v["diff"] = f.unified().into();
                }
                if let Some(found) = &f.found {
                    v["found"] = found.clone().into();
                }
                v
            })
            .collect();
        let status = if failed {
            "failed"
        } else if drift.is_empty() {
            "in-sync"
        } else {
            "drift"
        };
        let by = if answered_by == Answer::Compile { "compile" } else { "lock" };
        let mut doc =
            serde_json::json!({ "status": status, "exit_code": exit_code, "answered_by": by, "files": files, "diagnostics": diagnostics });
        if let Answer::Lock { rehashed } = answered_by {
            doc["rehashed"] = rehashed.into();
        }
        if !drift.is_empty() {
            doc["fix"] = fix.into();
        }
        println!("{}", serde_json::to_string_pretty(&doc).expect("check report serializes"));
        return;
    }
    let mut out = anstream::stdout();
    if drift.is_empty() {
        let msg = if failed { "check failed: see the errors above" } else { "in sync: the compiled tree matches the pod" };
        let _ = writeln!(out, "{msg}");
        return;
    }
    let bold = anstyle::Style::new().bold();
    let red = anstyle::AnsiColor::Red.on_default();
    let green = anstyle::AnsiColor::Green.on_default();
    let cyan = anstyle::AnsiColor::Cyan.on_default();
    let _ = writeln!(
        out,
        "{bold}drift: {} from what the pod compiles to{bold:#}",
        if drift.len() == 1 { "1 file differs".to_string() } else { format!("{} files differ", drift.len()) }
    );
    for f in drift {
        let style = match f.kind {
            ChangeKind::Create => green,
            ChangeKind::Update => cyan,
            ChangeKind::Delete => red,
        };
        let stat = if mode == DiffMode::None {
            String::new()
        } else {
            let (a, r) = f.stat();
            format!("  {green}+{a}{green:#} {red}-{r}{red:#}")
        };
        let _ = writeln!(out, "  {style}{:<6}{style:#} {}{stat}", word(f.kind), f.path);
    }
    if mode == DiffMode::Full {
        for f in drift {
            let _ = writeln!(out);
            for line in f.unified().lines() {
                let style = match line.as_bytes().first() {
                    _ if line.starts_with("+++") || line.starts_with("---") => bold,
                    Some(b'+') => green,
                    Some(b'-') => red,
                    Some(b'@') => cyan,
                    _ => anstyle::Style::new(),
                };
                let _ = writeln!(out, "{style}{line}{style:#}");
            }
        }
    }
    let _ = writeln!(out, "\nto update the compiled tree, run:\n  {fix}");
}
