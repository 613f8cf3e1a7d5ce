//! `clawc compat OLD NEW [--pod POD]...`: the release gate for service descriptors.

use super::inputs::PodArgs;
use crate::compat::load::{self, Failed, Loaded, Source};
use crate::compat::report::{self, Report};
use crate::compat::rules::Severity;
use crate::compat::{self, accept, codes, grants};
use crate::diag::{Diagnostic, Diagnostics};
use crate::grant::SecretMode;
use crate::sourcemap::SourceMap;
use clap::{Args, ValueEnum};
use std::io::Write as _;
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    about = "The release gate: compare two releases of a service descriptor (breaking changes, privilege gains, the pods' grants)",
    after_help = "OLD and NEW are each one of:
  svc/api/.claw-describe.json     a descriptor file (version 1 or 2)
  mcp/.claw-tools.json            a baked MCP tools/list snapshot
  svc/api                         a build context (its descriptor label or .claw-describe.json)
  image:trading-api:1.4           an image, read through the --images sources
  git:origin/main:svc/api.json    a file at a git revision of the current repository (PATH from the repository's top)

Examples:
  clawc compat git:origin/main:svc/api/.claw-describe.json svc/api/.claw-describe.json --pod claw-pod.yml
  clawc compat old.json new.json --format github --accept compat-accept.yml
  clawc compat --list-rules --format markdown

Exit codes: 0 nothing at or above --fail-on · 1 something is · 2 invalid input (a side that does not load, a bad pod or accept file) · 3 environment failure.
See docs/compat.md and docs/compat-rules.md."
)]
pub struct CompatArgs {
    /// The released descriptor source (see below)
    #[arg(required_unless_present = "list_rules", value_name = "OLD")]
    old: Option<String>,
    /// The candidate descriptor source
    #[arg(required_unless_present = "list_rules", value_name = "NEW")]
    new: Option<String>,
    /// A pod whose agents are named in findings and whose grants are checked against NEW (repeatable)
    #[arg(long, value_name = "POD")]
    pod: Vec<PathBuf>,
    /// The service under test: its name in the pods (needed when a pod refers to it by image), and the name fingerprints use [default: the pod service whose describe-file, --descriptor or build context is OLD or NEW, else the file's name]
    #[arg(long, value_name = "NAME")]
    service: Option<String>,
    /// The lowest severity that fails the gate (exit 1)
    #[arg(long, value_enum, default_value_t = FailOn::Err)]
    fail_on: FailOn,
    /// Output format (--list-rules: text, json or markdown)
    #[arg(long, value_enum, default_value_t = CompatFormat::Text)]
    format: CompatFormat,
    /// A committed YAML list of accepted findings: `- {fingerprint: HEX, reason: …}` or `- {rule: ID, tool: NAME, reason: …}`
    #[arg(long, value_name = "FILE")]
    accept: Option<PathBuf>,
    /// Print the rule catalogue and exit
    #[arg(long, conflicts_with_all = ["old", "new", "pod", "accept"])]
    list_rules: bool,
    #[command(flatten)]
    input: PodArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum FailOn {
    Err,
    Warn,
    Info,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CompatFormat {
    /// Findings grouped by severity (coloured on a terminal)
    #[value(alias = "human")]
    Text,
    /// One JSON document (schemas/compat.schema.json)
    Json,
    /// A pull request comment: a summary line and a table
    Markdown,
    /// GitHub Actions workflow commands pointing at NEW's lines
    Github,
    /// JUnit XML: one test case per rule
    Junit,
    /// SARIF 2.1.0 for code-scanning UIs
    Sarif,
}

/// Prints diagnostics, with temporary paths shown as the `git:` sources they stand for.
fn print_diags(diags: &[Diagnostic], sources: &SourceMap, format: CompatFormat, renames: &[(String, String)]) {
    let rename = |s: String| renames.iter().fold(s, |s, (from, to)| s.replace(from, to));
    for d in diags {
        if format == CompatFormat::Json {
            let line = serde_json::to_string(&d.to_json(sources)).expect("diagnostics serialize");
            println!("{}", rename(line));
        } else {
            eprintln!("{}", rename(format!("{:?}", d.to_report(sources))));
        }
    }
}

fn failed(f: &Failed, format: CompatFormat) -> i32 {
    print_diags(&f.diagnostics.0, &f.sources, format, &f.renames);
    f.exit_code()
}

/// Settings (clawc.toml, flags) that could not be worked out.
fn refused(r: &super::inputs::Refused, format: CompatFormat) -> i32 {
    print_diags(&r.diagnostics, &r.sources, format, &[]);
    r.code
}

fn one(d: Diagnostic, format: CompatFormat) -> i32 {
    let code = if d.is_error() { d.code.exit_code() } else { 0 };
    print_diags(&[d], &SourceMap::default(), format, &[]);
    code
}

pub(super) fn run(args: CompatArgs) -> i32 {
    if args.list_rules {
        return list_rules(args.format);
    }
    let (Some(old_arg), Some(new_arg)) = (&args.old, &args.new) else { unreachable!("clap requires OLD and NEW unless --list-rules") };
    let format = args.format;
    let (old_src, new_src) = match (Source::parse(old_arg), Source::parse(new_arg)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(d), _) | (_, Err(d)) => return one(d, format),
    };
    let first_pod = args.pod.first().cloned().unwrap_or_else(|| PathBuf::from("claw-pod.yml"));
    let opts = match args.input.options(&first_pod, None, SecretMode::Redact) {
        Ok(o) => o,
        Err(r) => return refused(&r, format),
    };
    let (mut old, mut new) = match load::load_pair(&old_src, &new_src, args.service.as_deref(), &opts) {
        Ok(pair) => pair,
        Err(f) => return failed(&f, format),
    };
    // Warnings of loading (e.g. a snapshot holding one page of tools/list).
    let mut warnings: Vec<serde_json::Value> = Vec::new();
    for side in [&old, &new] {
        if !side.diagnostics.0.is_empty() {
            print_diags(
                &side.diagnostics.0,
                &side.sources,
                if format == CompatFormat::Json { CompatFormat::Text } else { format },
                &side.renames,
            );
            warnings.extend(side.diagnostics.0.iter().map(|d| rename_json(serde_json::json!(d.to_json(&side.sources)), &side.renames)));
        }
    }
    let mut views = Vec::new();
    for pod in &args.pod {
        let opts = match args.input.options(pod, None, SecretMode::Redact) {
            Ok(o) => o,
            Err(r) => return refused(&r, format),
        };
        match grants::read(&opts, args.service.as_deref(), [&old, &new]) {
            Ok(v) => views.push(v),
            Err((diags, sources)) => {
                print_diags(&diags.0, &sources, format, &[]);
                return crate::compile::exit_code(&diags).max(2);
            }
        }
    }
    if let Some(v) = views.first() {
        old.release.service.clone_from(&v.service);
        new.release.service.clone_from(&v.service);
    }
    // The comparison and the pods' grants (each pod resolved with OLD and with NEW) are
    // independent: one thread each (the pods move to it: their environments are not Sync).
    let (compared, (views, held)) = std::thread::scope(|s| {
        let (old, new) = (&old, &new);
        let held = s.spawn(move || {
            let held = grants::hold(&views, old, new);
            (views, held)
        });
        let compared = compat::compare::compare(&old.release, &new.release);
        (compared, held.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    });
    let mut findings = compared.findings;
    let mut diags = Diagnostics::default();
    for (tool, why) in &compared.limited {
        diags.push(
            Diagnostic::warning(codes::TOO_COMPLEX, format!("tool \"{}\": {why}", crate::diag::printable(tool)))
                .help("the rest of this schema is reported as unclassified (WARN): review it by hand"),
        );
    }
    if !views.is_empty() {
        grants::attribute(&mut findings, &views, &held, &new);
    }
    let mut accept_sources = SourceMap::default();
    let mut stale = Vec::new();
    if let Some(path) = &args.accept {
        let entries = match accept::read(path, &mut accept_sources) {
            Ok(e) => e,
            Err(ds) => {
                let ds = Diagnostics(ds).sorted(&accept_sources);
                print_diags(&ds.0, &accept_sources, format, &[]);
                return crate::compile::exit_code(&ds).max(2);
            }
        };
        for e in accept::apply(&entries, &mut findings) {
            let w = accept::stale_warning(e);
            stale.push((
                accept_sources.name(e.loc.file).to_string(),
                e.loc.span.line,
                w.message.trim_start_matches("accept entry for ").trim_end_matches(" matches no finding").to_string(),
            ));
            diags.push(w);
        }
    }
    compat::sort(&mut findings);
    let fail_on = match args.fail_on {
        FailOn::Err => Severity::Err,
        FailOn::Warn => Severity::Warn,
        FailOn::Info => Severity::Info,
    };
    let is_failed = compat::fails(&findings, stale.len(), fail_on);
    let diags = Diagnostics(crate::diag::cap(diags.0));
    if format != CompatFormat::Json {
        print_diags(&diags.0, &accept_sources, CompatFormat::Text, &[]);
    }
    warnings.extend(diags.0.iter().map(|d| serde_json::json!(d.to_json(&accept_sources))));
    let pods: Vec<String> = args.pod.iter().map(|p| p.display().to_string()).collect();
    let (old_name, new_name) = (shown(&old, old_arg), shown(&new, new_arg));
    let r = Report {
        service: &new.release.service,
        old: &old_name,
        new: &new_name,
        pods: &pods,
        fail_on,
        findings: &findings,
        stale: &stale,
        warnings: &warnings,
        failed: is_failed,
    };
    let out = match format {
        CompatFormat::Text => report::text(&r),
        CompatFormat::Json => serde_json::to_string_pretty(&report::json(&r)).expect("JSON values serialize") + "\n",
        CompatFormat::Markdown => report::markdown(&r),
        CompatFormat::Github => report::github(&r),
        CompatFormat::Junit => report::junit(&r),
        CompatFormat::Sarif => serde_json::to_string_pretty(&report::sarif(&r)).expect("JSON values serialize") + "\n",
    };
    if format == CompatFormat::Text {
        let _ = anstream::stdout().write_all(out.as_bytes());
    } else {
        let _ = std::io::stdout().write_all(out.as_bytes());
    }
    let code = i32::from(is_failed);
    // The process exits next: freeing every schema of both releases would only cost time.
    old.leak();
    new.leak();
    std::mem::forget((views, findings));
    code
}

fn shown(side: &Loaded, arg: &str) -> String {
    match &side.renames[..] {
        [] => arg.to_string(),
        _ => side.release.file.clone(),
    }
}

fn rename_json(v: serde_json::Value, renames: &[(String, String)]) -> serde_json::Value {
    if renames.is_empty() {
        return v;
    }
    let text = renames.iter().fold(v.to_string(), |s, (from, to)| s.replace(from, to));
    serde_json::from_str(&text).unwrap_or(v)
}

fn list_rules(format: CompatFormat) -> i32 {
    let out = match format {
        CompatFormat::Text => report::list_rules_text(),
        CompatFormat::Json => serde_json::to_string_pretty(&report::list_rules_json()).expect("JSON values serialize") + "\n",
        CompatFormat::Markdown => compat::rules::markdown(),
        other => {
            eprintln!(
                "error: --list-rules prints text, json or markdown, not {}",
                other.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default()
            );
            return 2;
        }
    };
    print!("{out}");
    0
}
