//! `clawc report POD --matrix [--markdown]`.

use super::Format;
use super::inputs::{PodArgs, StrictArg};
use crate::access::{self, Matrix};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    about = "Access reports: the agents × tools matrix",
    after_help = "Exit codes: 0 reported · 2 invalid inputs, settings or command line (nothing to report without --matrix), or a warning with --strict · 3 environment failure (I/O, the Docker Engine unreachable with --images docker, an image the pod uses that no source has)."
)]
pub struct ReportArgs {
    /// The pod file
    pod: PathBuf,
    #[command(flatten)]
    input: PodArgs,
    #[command(flatten)]
    strict: StrictArg,
    /// Print the agents × tools access matrix (read-only tools marked)
    #[arg(long)]
    matrix: bool,
    /// Render the matrix as a Markdown table (for a pull-request comment); a format of its own, so not with --format
    #[arg(long, requires = "matrix", conflicts_with = "format")]
    markdown: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
}

pub(super) fn run(args: ReportArgs) -> i32 {
    if !args.matrix {
        eprintln!("error: nothing to report; pass --matrix (the full report is report.json, written by `clawc compile`)");
        return 2;
    }
    let compiled = match args.input.analyze(&args.pod, &args.strict, args.format) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let m = access::matrix(compiled.analysis.as_ref().expect("analyze returns an analysis"));
    match (args.format, args.markdown) {
        (Format::Json, _) => println!("{}", serde_json::to_string_pretty(&m).expect("matrix serializes")),
        (_, true) => print!("{}", markdown(&m)),
        (_, false) => print!("{}", text(&m)),
    }
    0
}

fn mark(effect: &str) -> &'static str {
    match effect {
        "read-only" => "ro",
        "side-effecting" => "rw",
        _ => "?",
    }
}

/// A Markdown table: one row per tool, one column per agent.
pub(super) fn markdown(m: &Matrix) -> String {
    let heads: Vec<String> = m.agents.iter().zip(&m.runners).map(|(a, r)| format!("{a} ({r})")).collect();
    let mut out = format!("| tool | effect | {} |\n|---|---|{}\n", heads.join(" | "), "---|".repeat(m.agents.len()));
    for r in &m.rows {
        let cells: Vec<&str> = r.granted.iter().map(|g| if *g { "✅" } else { "" }).collect();
        out.push_str(&format!("| `{}` | {} | {} |\n", r.tool, mark(r.effect), cells.join(" | ")));
    }
    out.push_str("\nro = read-only, rw = side-effecting, ? = not annotated\n");
    out
}

/// A plain-text table, agents as numbered columns (legend below).
pub(super) fn text(m: &Matrix) -> String {
    let tw = m.rows.iter().map(|r| super::width(&r.tool)).max().unwrap_or(4).max(4);
    let cols: Vec<String> = (1..=m.agents.len()).map(|i| i.to_string()).collect();
    let cw = cols.iter().map(String::len).max().unwrap_or(1);
    let mut out = format!("{}  eff  {}\n", super::pad("tool", tw), cols.iter().map(|c| format!("{c:>cw$}")).collect::<Vec<_>>().join(" "));
    for r in &m.rows {
        let cells: Vec<String> = r.granted.iter().map(|g| format!("{:>cw$}", if *g { "x" } else { "." })).collect();
        out.push_str(&format!("{}  {:<3}  {}\n", super::pad(&r.tool, tw), mark(r.effect), cells.join(" ")));
    }
    out.push_str("\nagents: ");
    out.push_str(
        &m.agents.iter().zip(&m.runners).enumerate().map(|(i, (a, r))| format!("{}={a} ({r})", i + 1)).collect::<Vec<_>>().join("  "),
    );
    out.push_str("\nro = read-only, rw = side-effecting, ? = not annotated\n");
    out
}
