//! `clawc skill compile DIR`: check a skill folder's tools and compile its
//! `tool-manifest.yaml` into `dynamic_tools.json`, `.lock.json` and `.report.json`.

use super::Format;
use crate::skill::compile::{Compiled, Request, What, compile};
use clap::{Args, Subcommand, ValueEnum};
use std::collections::BTreeSet;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    about = "Skill folders that bring tools: `clawc skill compile DIR` checks a Skill Tools package or compiles a tool-manifest.yaml (docs/skills.md)",
    after_help = "Exit codes: 0 compiled · 2 invalid input, nothing written · 3 I/O failure (`clawc skill compile --help` says more)."
)]
pub struct SkillArgs {
    #[command(subcommand)]
    command: SkillCommand,
}

#[derive(Subcommand, Debug)]
enum SkillCommand {
    /// Check a skill folder's tools; compile its tool-manifest.yaml into dynamic_tools.json, dynamic_tools.lock.json and dynamic_tools.report.json beside it
    #[command(after_help = "DIR holds tool-manifest.yaml (dynamic tools: script and http executors) or tools.json (a
Skill Tools package: SKILL.md + tools.json + scripts/). A manifest is compiled and the three
files are written beside it (deterministically; each replaced atomically; a symlink at an
output name is replaced, never followed). A Skill Tools package is validated and counted,
and nothing is written. An invalid tool is a warning and is skipped; the rest compile.
What is checked, the aliases and the defaults: docs/skills.md.

Examples:
  clawc skill compile skills/weather
  clawc skill compile skills/weather --static-tools search,read_file --format json

Exit codes: 0 compiled (warnings about single tools included) · 2 the manifest or package
cannot be read or compiled (nothing is written) · 3 I/O failure writing the files.")]
    Compile(CompileArgs),
}

#[derive(Args, Debug)]
struct CompileArgs {
    /// The skill folder (holding tool-manifest.yaml or tools.json)
    dir: PathBuf,
    /// Names of the static tools the model also sees: a dynamic tool of one of these names is shadowed (the static tool wins)
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    static_tools: Vec<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = SkillFormat::Text)]
    format: SkillFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SkillFormat {
    /// Diagnostics drawn on stderr; the counts on stdout
    #[value(alias = "human")]
    Text,
    /// One JSON object per line on stdout: each diagnostic, then {"compiled_ok", "invalid_tools", "shadowed_tools"} (schemas/skill-counts.schema.json)
    Json,
}

pub(super) fn run(args: SkillArgs) -> i32 {
    match args.command {
        SkillCommand::Compile(a) => run_compile(&a),
    }
}

fn run_compile(args: &CompileArgs) -> i32 {
    let format = if args.format == SkillFormat::Json { Format::Json } else { Format::Human };
    let given = args.dir.to_string_lossy().into_owned();
    let prefix = match given.trim_end_matches('/') {
        "" | "." => String::new(),
        d => format!("{d}/"),
    };
    let static_tools: BTreeSet<String> = args.static_tools.iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    let req = Request { dir: &args.dir, prefix: prefix.clone(), static_tools };
    let Compiled { sources, diagnostics, what, counts, outputs } = compile(&req);
    super::print_diagnostics(&diagnostics.0, &sources, format);
    let Some(counts) = counts else {
        return diagnostics.errors().map(|d| d.code.exit_code()).max().unwrap_or(2);
    };
    let mut written = Vec::new();
    if let Some((dir, files)) = &outputs {
        match crate::skill::write::write(dir, &prefix, files) {
            Ok(w) => written = w,
            Err(d) => {
                super::print_diagnostics(std::slice::from_ref(&d), &sources, format);
                return d.code.exit_code();
            }
        }
    }
    match format {
        Format::Json => println!("{}", serde_json::to_string(&counts).expect("counts serialize")),
        Format::Human => {
            println!(
                "compiled_ok {} · invalid_tools {} · shadowed_tools {}",
                counts.compiled_ok, counts.invalid_tools, counts.shadowed_tools
            );
            match (what, &outputs) {
                (Some(What::Package), _) => println!("a Skill Tools package: checked, nothing written"),
                (_, Some((_, files))) if written.is_empty() => {
                    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
                    println!("up to date: {}", names.join(", "));
                }
                _ => println!(
                    "wrote {}",
                    written.iter().map(|n| crate::diag::printable(&format!("{prefix}{n}"))).collect::<Vec<_>>().join(", ")
                ),
            }
        }
    }
    0
}
