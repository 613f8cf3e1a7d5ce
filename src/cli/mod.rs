//! The command line: one file per subcommand.

mod check;
mod compat;
mod compile;
mod config;
mod describe;
mod explain;
mod explain_code;
mod inputs;
mod merge;
mod report;
mod skill;
mod watch;
mod who_can;

use clap::{Args, FromArgMatches, Subcommand, ValueEnum};

// A subcommand's text (its `about`, `after_help`) lives on its arguments' struct, not on
// this enum's variant: `command_for` builds a subcommand from the struct alone. (A doc
// comment here would become the root's `about`.)
#[derive(Subcommand, Debug)]
pub enum Command {
    Compile(compile::CompileArgs),
    Describe(describe::DescribeArgs),
    Explain(explain::ExplainArgs),
    WhoCan(who_can::WhoCanArgs),
    Report(report::ReportArgs),
    Merge(merge::MergeArgs),
    Compat(compat::CompatArgs),
    Skill(skill::SkillArgs),
    Config(config::ConfigArgs),
    ExplainCode(explain_code::ExplainCodeArgs),
}

/// What adds a subcommand's arguments (and its texts) to a `clap::Command`.
type Augment = fn(clap::Command) -> clap::Command;

/// Every subcommand by name, with what adds its arguments (the same as [`Command`]'s
/// derive does; a test holds the two to each other).
const SUBCOMMANDS: [(&str, Augment); 10] = [
    ("compile", compile::CompileArgs::augment_args),
    ("describe", describe::DescribeArgs::augment_args),
    ("explain", explain::ExplainArgs::augment_args),
    ("who-can", who_can::WhoCanArgs::augment_args),
    ("report", report::ReportArgs::augment_args),
    ("merge", merge::MergeArgs::augment_args),
    ("compat", compat::CompatArgs::augment_args),
    ("skill", skill::SkillArgs::augment_args),
    ("config", config::ConfigArgs::augment_args),
    ("explain-code", explain_code::ExplainCodeArgs::augment_args),
];

/// `clawc` without its subcommands.
fn root() -> clap::Command {
    clap::Command::new("clawc")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Compile Clawdapus pods into deterministic per-agent artifacts")
        .after_help("Settings: flags, then CLAWC_IMAGES, then the nearest clawc.toml, then defaults (docs/config.md; `clawc config` shows them).\n\nExit codes (every command): 0 success · 1 drift (compile --check, merge --check) or findings at or above --fail-on (compat) · 2 invalid inputs, settings or command line · 3 environment failure (I/O, Docker, a missing image). `clawc <command> --help` says what each means for it.")
        .subcommand_required(true)
        .arg_required_else_help(true)
}

/// The whole command line: every subcommand (what `clawc --help` lists).
pub fn command() -> clap::Command {
    Command::augment_subcommands(root())
}

/// The command line that can parse `args`: when its first argument names a subcommand,
/// only that one is built. Building all ten (their arguments, help texts and value lists)
/// was a tenth of a no-op `compile --check` in a pre-commit hook, a process that is mostly
/// starting and ending. Any other first argument (`--help`, `help`, a typo to suggest a
/// name for) gets the whole command line.
fn command_for(args: &[std::ffi::OsString]) -> clap::Command {
    let named = args.get(1).and_then(|a| SUBCOMMANDS.iter().find(|(name, _)| a == name));
    match named {
        Some((name, augment)) => root().subcommand(augment(clap::Command::new(*name))),
        None => command(),
    }
}

/// Parses `args` (the program's name first) as [`command_for`] builds them.
fn parse(args: Vec<std::ffi::OsString>) -> Result<Command, clap::Error> {
    parse_with(command_for(&args), args)
}

/// Parses `args` with `cmd`; an error is rendered against `cmd`, as the user sees it.
fn parse_with(mut cmd: clap::Command, args: Vec<std::ffi::OsString>) -> Result<Command, clap::Error> {
    let mut matches = cmd.try_get_matches_from_mut(args)?;
    Command::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cmd))
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
    let command = match parse(args.into_iter().collect()) {
        Ok(command) => command,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match command {
        Command::Compile(args) => compile::run(args),
        Command::Describe(args) => describe::run(args),
        Command::Explain(args) => explain::run(args),
        Command::WhoCan(args) => who_can::run(args),
        Command::Report(args) => report::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Compat(args) => compat::run(args),
        Command::Config(args) => config::run(args),
        Command::Skill(args) => skill::run(args),
        Command::ExplainCode(args) => explain_code::run(args),
    }
}

#[cfg(test)]
mod tests {
    use super::{SUBCOMMANDS, command, command_for, parse_with, root};
    use std::ffi::OsString;

    #[test]
    fn the_command_line_definition_is_consistent() {
        command().debug_assert();
        for (name, _) in SUBCOMMANDS {
            command_for(&["clawc".into(), name.into()]).debug_assert();
        }
    }

    /// What `cmd` makes of `args`: the command, or the error as the user would see it.
    fn outcome(cmd: clap::Command, args: &[OsString]) -> String {
        match parse_with(cmd, args.to_vec()) {
            Ok(c) => format!("{c:?}"),
            Err(e) => format!("{:?} {} {}", e.kind(), e.exit_code(), e.render()),
        }
    }

    #[test]
    fn a_subcommand_built_alone_is_the_one_of_the_whole_command_line() {
        let mut whole = command();
        whole.build();
        let names: Vec<&str> = whole.get_subcommands().map(clap::Command::get_name).filter(|n| *n != "help").collect();
        assert_eq!(names, SUBCOMMANDS.map(|(n, _)| n), "SUBCOMMANDS lists Command's variants in order");
        // The derive adds subcommands and nothing else to the root (a doc comment on
        // `Command` would replace its about).
        let bare = root();
        let text = |c: &clap::Command| {
            (
                c.get_about().map(ToString::to_string),
                c.get_long_about().map(ToString::to_string),
                c.get_after_help().map(ToString::to_string),
            )
        };
        assert_eq!(text(&whole), text(&bare));
        for name in names {
            let args: Vec<OsString> = vec!["clawc".into(), name.into()];
            let mut alone = command_for(&args);
            alone.build();
            assert_eq!(alone.get_subcommands().filter(|s| s.get_name() != "help").count(), 1, "{name}");
            let (mut a, mut w) = (alone.find_subcommand(name).unwrap().clone(), whole.find_subcommand(name).unwrap().clone());
            assert_eq!(a.render_long_help().to_string(), w.render_long_help().to_string(), "{name} --help");
            assert_eq!(a.render_help().to_string(), w.render_help().to_string(), "{name} -h");
            assert_eq!(a.render_usage().to_string(), w.render_usage().to_string(), "{name}");
            for tail in [
                &[][..],
                &["--help"],
                &["-h"],
                &["--version"],
                &["--bogus"],
                &["--format", "nope"],
                &["x", "--strict"],
                &["x", "y", "--format", "json"],
                &["compile", "skills/a", "--static-tools", "a,b"],
                &["--check", "--diff", "short"],
                &["--images", "none", "-o", "out", "--check"],
                &["--list-rules", "--format", "markdown"],
                &["a::code"],
            ] {
                let args: Vec<OsString> = ["clawc", name].into_iter().chain(tail.iter().copied()).map(OsString::from).collect();
                assert_eq!(outcome(command_for(&args), &args), outcome(command(), &args), "{args:?}");
            }
            // Arguments that are not UTF-8, as a path and as a value clap must decode.
            use std::os::unix::ffi::OsStringExt;
            let bad = || OsString::from_vec(vec![0xff, 0xfe]);
            for tail in [vec![bad()], vec!["--format".into(), bad()], vec!["-o".into(), bad()]] {
                let args: Vec<OsString> = ["clawc".into(), name.into()].into_iter().chain(tail).collect();
                assert_eq!(outcome(command_for(&args), &args), outcome(command(), &args), "{args:?}");
            }
        }
    }

    #[test]
    fn only_an_exact_subcommand_name_builds_one_subcommand() {
        let count = |args: &[&str]| command_for(&args.iter().map(OsString::from).collect::<Vec<_>>()).get_subcommands().count();
        assert_eq!(count(&["clawc", "compile", "--check"]), 1);
        for other in [&["clawc"][..], &["clawc", "--help"], &["clawc", "help", "compile"], &["clawc", "compil"], &["clawc", "COMPILE"]] {
            assert_eq!(count(other), SUBCOMMANDS.len(), "{other:?}");
        }
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
