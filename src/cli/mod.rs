//! The command line: one file per subcommand.

mod check;
mod compile;

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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Diagnostics drawn with source snippets on stderr, a summary on stdout
    #[default]
    Human,
    /// One JSON object per line on stdout: each diagnostic, then {"summary": …}
    Json,
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
    }
}
