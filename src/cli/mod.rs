//! The command line: one file per subcommand.

mod check;
mod compat;
mod compile;
mod describe;
mod explain;
mod inputs;
mod merge;
mod report;
mod who_can;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "clawc", version, about = "Compile Clawdapus pods into deterministic per-agent artifacts", long_about = None)]
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
    /// What a diagnostic code means, when it is raised and its exit code (docs/diagnostics.md)
    ExplainCode {
        /// A code, e.g. crate::pod::not_a_pod
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

/// Runs the command line and returns the process exit code.
pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
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
}
