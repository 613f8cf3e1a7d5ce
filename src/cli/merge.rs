//! `clawc merge FRAGMENT TARGET`: merge a runner file clawc wrote into the user's own.

use super::Format;
use crate::merge::{Request, codes};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    about = "Merge a runner file clawc wrote into your own (your keys, comments and other servers kept; docs/merge.md)",
    after_help = "What clawc owns in each runner file, and every rule, is in docs/merge.md. In short: a server
entry the fragment defines replaces TARGET's entry of that name whole (nothing of the old
entry survives); permission and tool-filter items of those servers are replaced; everything
else in TARGET (your keys, comments, other servers) is kept. Merging twice changes nothing.

Examples:
  clawc merge out/runners/coder/home/.codex/config.toml ~/.codex/config.toml
  clawc merge out/runners/coder/home/.claude.json ~/.claude.json --check
  clawc merge frag.yaml ~/.hermes/config.yaml --runner hermes --stdout

Exit codes: 0 merged or up to date · 1 --check: TARGET would change · 2 invalid input · 3 I/O failure."
)]
pub struct MergeArgs {
    /// The runner file clawc wrote, e.g. <out>/runners/<agent-id>/home/.codex/config.toml
    fragment: PathBuf,
    /// Your file to merge it into (created when missing); a symlink is refused
    target: PathBuf,
    /// The runner whose rules apply [default: from the fragment's path]
    #[arg(long, value_name = "NAME")]
    runner: Option<String>,
    /// Write nothing: exit 1 and print a diff (secret values redacted) when TARGET would change
    #[arg(long, conflicts_with = "stdout")]
    check: bool,
    /// Print the merged file on stdout instead of writing TARGET
    #[arg(long, conflicts_with = "format")]
    stdout: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = MergeFormat::Human)]
    format: MergeFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum MergeFormat {
    /// Diagnostics drawn on stderr; the --check diff and a summary line on stdout
    Human,
    /// One JSON object per line on stdout: each diagnostic, then {"summary": {"target", "status", "changes", "diff"}}
    Json,
}

pub(super) fn run(args: MergeArgs) -> i32 {
    let req = Request { fragment: &args.fragment, target: &args.target, runner: args.runner.as_deref() };
    let merged = crate::merge::merge(&req);
    // With --stdout, stdout is the file: diagnostics go to stderr.
    let format = if args.stdout || args.format == MergeFormat::Human { Format::Human } else { Format::Json };
    super::print_diagnostics(&merged.diagnostics, &merged.sources, format);
    let Some(outcome) = merged.outcome else {
        return merged.diagnostics.iter().filter(|d| d.is_error()).map(|d| d.code.exit_code()).max().unwrap_or(2);
    };
    let target = args.target.to_string_lossy().into_owned();
    let shown = crate::diag::printable(&target);
    let changed = outcome.old.as_deref() != Some(outcome.new.as_slice());
    if args.stdout {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&outcome.new);
        let _ = out.flush();
        return 0;
    }
    if args.check {
        if !changed {
            summary(format, &shown, "unchanged", &outcome.changes, None);
            return 0;
        }
        let diff = crate::merge::diff(&outcome, &target);
        let d = crate::diag::Diagnostic::error(codes::WOULD_CHANGE, format!("`{shown}` would change")).help(format!(
            "run `clawc merge {} {}` and commit the result",
            crate::diag::printable(&args.fragment.to_string_lossy()),
            shown
        ));
        super::print_diagnostics(std::slice::from_ref(&d), &merged.sources, format);
        if format == Format::Human {
            print!("{diff}");
        }
        summary(format, &shown, "would-change", &outcome.changes, Some(&diff));
        return codes::WOULD_CHANGE.exit_code();
    }
    if !changed {
        summary(format, &shown, "unchanged", &outcome.changes, None);
        return 0;
    }
    if let Err(d) = crate::merge::write(&args.target, &outcome) {
        super::print_diagnostics(std::slice::from_ref(&d), &merged.sources, format);
        return d.code.exit_code();
    }
    let status = if outcome.old.is_some() { "updated" } else { "created" };
    summary(format, &shown, status, &outcome.changes, None);
    0
}

/// The last line: what happened to TARGET (and, in JSON, the diff of `--check`).
fn summary(format: Format, target: &str, status: &str, changes: &[String], diff: Option<&str>) {
    match format {
        Format::Json => {
            let mut s = serde_json::json!({ "target": target, "status": status, "changes": changes });
            if let Some(d) = diff {
                s["diff"] = d.into();
            }
            println!("{}", serde_json::json!({ "summary": s }));
        }
        Format::Human => match status {
            "unchanged" => println!("`{target}` is up to date"),
            "would-change" => println!("`{target}` would change: {}", changes.join(", ")),
            _ => println!("{status} `{target}`: {}", changes.join(", ")),
        },
    }
}
