//! The command line: one file per subcommand.

mod check;
mod compat;
mod compile;
mod config;
mod describe;
mod explain;
mod inputs;
mod merge;
mod report;
mod skill;
mod who_can;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "clawc",
    version,
    about = "Compile Clawdapus pods into deterministic per-agent artifacts",
    long_about = None,
    after_help = "Settings: flags, then CLAWC_IMAGES, then the nearest clawc.toml, then defaults (docs/config.md; `clawc config` shows them).\n\nExit codes (every command): 0 success · 1 drift (compile --check, merge --check) or findings at or above --fail-on (compat) · 2 invalid inputs, settings or command line · 3 environment failure (I/O, Docker, a missing image). `clawc <command> --help` says what each means for it."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Compile a pod into per-agent artifacts (tools.json, feeds.json, memory.json, CLAWDAPUS.md, report.json)
    Compile(compile::CompileArgs),
    /// What clawc reads from one service: its tools and transports, feeds, memory, auth, skill and runner, and where each came from
    Describe(describe::DescribeArgs),
    /// Why an agent can (or cannot) call a tool, and the smallest grant that would change it
    Explain(explain::ExplainArgs),
    /// Every agent that can call a tool (or any tool of a service), and through which grant
    WhoCan(who_can::WhoCanArgs),
    /// Access reports: the agents × tools matrix
    Report(report::ReportArgs),
    /// Merge a runner file clawc wrote into your own (your keys, comments and other servers kept; docs/merge.md)
    Merge(merge::MergeArgs),
    /// The release gate: compare two releases of a service descriptor (breaking changes, privilege gains, the pods' grants)
    Compat(compat::CompatArgs),
    /// Skill folders that bring tools: `clawc skill compile DIR` checks a Skill Tools package or compiles a tool-manifest.yaml (docs/skills.md)
    Skill(skill::SkillArgs),
    /// The effective settings for a pod and where each came from: a flag, a CLAWC_* variable, clawc.toml or the default (docs/config.md)
    Config(config::ConfigArgs),
    /// What a diagnostic code means, when it is raised and its exit code (docs/diagnostics.md)
    #[command(after_help = "Exit codes: 0 explained · 2 not a code clawc raises (a close one is suggested).")]
    ExplainCode {
        /// A code, e.g. clawc::pod::not_a_pod
        code: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Diagnostics drawn with source snippets on stderr, a summary on stdout
    #[default]
    Human,
    /// Machine-readable on stdout: for `compile`, one JSON object per line (each diagnostic, then {"summary": …}); for `compile --check`, one document (schemas/check.schema.json); for the other commands, one document
    Json,
}

/// Prints diagnostics: drawn on stderr (human), or one JSON object per line on stdout.
fn print_diagnostics(diags: &[crate::diag::Diagnostic], sources: &crate::sourcemap::SourceMap, format: Format) {
    for d in diags {
        match format {
            Format::Human => eprintln!("{:?}", d.to_report(sources)),
            Format::Json => println!("{}", serde_json::to_string(&d.to_json(sources)).expect("diagnostics serialize")),
        }
    }
}

/// How many terminal columns `s` takes (names and paths may be non-ASCII).
fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// `s` padded with spaces to `w` columns.
fn pad(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(width(s))))
}

/// Rows as aligned columns, two spaces apart, each line starting with `indent`: every
/// column but the last padded to its widest cell.
fn table(rows: &[Vec<String>], indent: &str) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| width(s)).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> =
            row.iter().enumerate().map(|(c, s)| if c + 1 == row.len() { s.clone() } else { pad(s, widths[c]) }).collect();
        out.push_str(indent);
        out.push_str(&cells.join("  "));
        out.push('\n');
    }
    out
}

/// Runs the command line `args` (the program's name first) and returns the process exit code.
pub fn run(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match cli.command {
        Command::Compile(args) => compile::run(args),
        Command::Describe(args) => describe::run(args),
        Command::Explain(args) => explain::run(args),
        Command::WhoCan(args) => who_can::run(args),
        Command::Report(args) => report::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Compat(args) => compat::run(args),
        Command::Config(args) => config::run(args),
        Command::Skill(args) => skill::run(args),
        Command::ExplainCode { code } => explain_code(&code),
    }
}

fn explain_code(code: &str) -> i32 {
    use crate::diag::catalogue::{ALL, Code, Raised};
    let Some(c) = Code::find(code) else {
        let help = crate::diag::suggest(code, ALL.iter().map(|c| c.as_str()), "every code is listed in docs/diagnostics.md");
        eprintln!("unknown diagnostic code `{code}`: {help}");
        return 2;
    };
    let i = c.info();
    let raised = match i.raised {
        Raised::Error => "an error",
        Raised::Warning => "a warning",
        Raised::Either => "an error or a warning",
    };
    println!("{}\n\n{}\n\nraised by the {} pass as {raised}", i.code, i.explanation, i.pass.name());
    if i.raised != Raised::Warning {
        println!("exit code of an error: {}", i.exit.code());
    }
    println!("example: {}", i.example);
    0
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }

    #[test]
    fn tables_align_by_display_width() {
        let rows = vec![
            vec!["ä-tool".to_string(), "x".to_string()],
            vec!["日本".to_string(), "y".to_string()],
            vec!["ab".to_string(), "z".to_string()],
        ];
        assert_eq!(super::table(&rows, "  "), "  ä-tool  x\n  日本    y\n  ab      z\n");
    }
}
