//! `clawc compile`.

use super::Format;
use super::check::DiffMode;
use super::inputs::PodArgs;
use crate::diag::{Diagnostic, Severity};
use crate::grant::SecretMode;
use crate::output::write::write_tree;
use crate::sourcemap::SourceMap;
use crate::{Options, compile};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(
    after_help = "Exit codes: 0 success · 2 invalid inputs or command line (diagnostics printed, nothing written) · 3 environment failure (I/O, Docker unreachable, image missing, an --out clawc refuses to write, interrupted before the commit: the previous tree is left as it was)."
)]
pub struct CompileArgs {
    /// The pod file
    #[arg(default_value = "claw-pod.yml")]
    pod: PathBuf,
    #[command(flatten)]
    input: PodArgs,
    /// Output directory [default: <pod dir>/.claw-compiled]
    #[arg(short, long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// How bearer tokens are written: `redact` writes ${VAR} (safe to commit), `inline` writes values with mode 0600
    #[arg(long, value_enum, default_value_t = Secrets::Redact)]
    secrets: Secrets,
    /// Output format for diagnostics and the summary
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Compile in memory and compare with the tree in --out; write nothing. Exit 0 in sync, 1 drift
    #[arg(long)]
    check: bool,
    /// With --check: how much of each difference to show
    #[arg(long, value_enum, default_value_t = DiffMode::Full, requires = "check")]
    diff: DiffMode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Secrets {
    Redact,
    Inline,
}

pub(super) fn run(args: CompileArgs) -> i32 {
    if !args.check {
        crate::output::write::watch_signals();
    }
    let secrets = match args.secrets {
        Secrets::Redact => SecretMode::Redact,
        Secrets::Inline => SecretMode::Inline,
    };
    let opts = match args.input.options(&args.pod, secrets) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        args.pod.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), PathBuf::from).join(".claw-compiled")
    });
    if let Some(code) = args.check.then(|| check_from_lock(&args, &opts, &out)).flatten() {
        return code;
    }
    let compiled = compile(&opts);
    if !(args.check && args.format == Format::Json) {
        super::print_diagnostics(&compiled.diagnostics.0, &compiled.sources, args.format);
    }
    let Some(artifacts) = compiled.artifacts.as_ref() else {
        if args.check && args.format == Format::Json {
            super::check::print(&[], args.diff, "", args.format, json_diags(&compiled), "compile", compiled.exit_code());
            return compiled.exit_code();
        }
        summary(args.format, "failed", compiled.exit_code(), None, &compiled);
        return compiled.exit_code();
    };
    if args.check {
        return check(&args, &out, artifacts, &compiled);
    }
    match write_tree(&out, artifacts, &compiled.secrets) {
        Ok(w) => {
            super::print_diagnostics(&w.warnings, &compiled.sources, args.format);
            let line = format!(
                "compiled {} agent{} into {}: {} written, {} unchanged, {} removed",
                compiled.agents,
                if compiled.agents == 1 { "" } else { "s" },
                out.display(),
                w.written.len(),
                w.unchanged,
                w.removed.len()
            );
            summary(args.format, "ok", 0, Some((&line, &w, &out)), &compiled);
            0
        }
        Err(d) => {
            super::print_diagnostics(std::slice::from_ref(&d), &compiled.sources, args.format);
            let code = d.code.exit_code();
            summary(args.format, "failed", code, None, &compiled);
            code
        }
    }
}

fn summary(
    format: Format,
    status: &str,
    code: i32,
    written: Option<(&str, &crate::output::write::WriteSummary, &PathBuf)>,
    c: &crate::Compiled,
) {
    let errors = c.diagnostics.0.iter().filter(|d| d.severity == Severity::Error).count();
    let warnings = c.diagnostics.0.len() - errors;
    match format {
        Format::Human => match written {
            Some((line, _, _)) => println!(
                "{line}{}",
                if warnings > 0 { format!(" ({warnings} warning{})", if warnings == 1 { "" } else { "s" }) } else { String::new() }
            ),
            None if errors == 0 => eprintln!("error: the compiled tree was not written (see above)"),
            None => eprintln!("error: compile failed with {errors} error{}; nothing was written", if errors == 1 { "" } else { "s" }),
        },
        Format::Json => {
            let mut s =
                serde_json::json!({ "status": status, "exit_code": code, "errors": errors, "warnings": warnings, "agents": c.agents });
            if let Some((_, w, out)) = written {
                s["out"] = out.display().to_string().into();
                s["written"] = w.written.clone().into();
                s["unchanged"] = w.unchanged.into();
                s["removed"] = w.removed.clone().into();
            }
            println!("{}", serde_json::json!({ "summary": s }));
        }
    }
}

fn json_diags(c: &crate::Compiled) -> Vec<serde_json::Value> {
    json_values(&c.diagnostics.0, &c.sources)
}

fn json_values(diags: &[Diagnostic], sources: &SourceMap) -> Vec<serde_json::Value> {
    diags.iter().map(|d| serde_json::to_value(d.to_json(sources)).expect("diagnostics serialize")).collect()
}

/// The command that brings the tree in sync: this command line without `--check`.
fn fix_command(args: &CompileArgs) -> String {
    let mut cmd = vec!["clawc".to_string(), "compile".to_string(), shell_word(&args.pod.display().to_string())];
    if let Some(o) = &args.out {
        cmd.extend(["-o".to_string(), shell_word(&o.display().to_string())]);
    }
    if let Some(e) = &args.input.env_file {
        cmd.extend(["--env-file".to_string(), shell_word(&e.display().to_string())]);
    }
    if let Some(r) = &args.input.root {
        cmd.extend(["--root".to_string(), shell_word(&r.display().to_string())]);
    }
    for (svc, path) in &args.input.descriptor {
        cmd.extend(["--descriptor".to_string(), shell_word(&format!("{svc}={}", path.display()))]);
    }
    for (svc, ty) in &args.input.runner {
        cmd.extend(["--runner".to_string(), shell_word(&format!("{svc}={ty}"))]);
    }
    if args.input.images != [crate::image::ImageSource::Auto] {
        let list: Vec<String> = args.input.images.iter().map(std::string::ToString::to_string).collect();
        cmd.extend(["--images".to_string(), shell_word(&list.join(","))]);
    }
    if args.secrets == Secrets::Inline {
        cmd.extend(["--secrets".to_string(), "inline".to_string()]);
    }
    cmd.join(" ")
}

fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The fast path: when the lock proves inputs and outputs unchanged, only the committed
/// tree's secret scan remains. `None` means "compile and compare".
fn check_from_lock(args: &CompileArgs, opts: &Options, out: &std::path::Path) -> Option<i32> {
    let env = crate::compile::environment(opts);
    let crate::lock::Replay::InSync { outputs, secret_keys } = crate::compile::replay_lock(opts, &env, out) else { return None };
    let secrets = secret_keys.iter().filter_map(|k| env.get(k).filter(|v| !v.is_empty()).map(|v| (v.to_string(), k.clone()))).collect();
    let leaks = crate::secrets::scan_committed(outputs.iter().map(|(p, b)| (p.as_str(), b.as_slice())), &secrets);
    let sources = SourceMap::default();
    let failed = leaks.iter().any(Diagnostic::is_error);
    if args.format == Format::Human {
        super::print_diagnostics(&leaks, &sources, args.format);
    }
    let diags = json_values(&leaks, &sources);
    let code = i32::from(failed);
    super::check::print(&[], args.diff, &fix_command(args), args.format, diags, "lock", code);
    Some(code)
}

fn check(args: &CompileArgs, out: &std::path::Path, artifacts: &crate::artifact::ArtifactSet, compiled: &crate::Compiled) -> i32 {
    match crate::output::check::drift(out, artifacts, &compiled.secrets) {
        Ok(mut drift) => {
            // Never show a token: a committed literal appears as its variable in the diff.
            for f in &mut drift {
                f.old = crate::secrets::mask(&f.old, &compiled.secrets);
                f.new = crate::secrets::mask(&f.new, &compiled.secrets);
            }
            let on_disk = crate::output::check::committed(out, artifacts.0.keys().cloned());
            let leaks = crate::secrets::scan_committed(on_disk.iter().map(|(p, b)| (p.as_str(), b.as_slice())), &compiled.secrets);
            let leaks: Vec<Diagnostic> = leaks.into_iter().filter(Diagnostic::is_error).collect();
            if args.format == Format::Human {
                super::print_diagnostics(&leaks, &compiled.sources, args.format);
            }
            let mut diags = json_diags(compiled);
            diags.extend(json_values(&leaks, &compiled.sources));
            let code = i32::from(!(drift.is_empty() && leaks.is_empty()));
            super::check::print(&drift, args.diff, &fix_command(args), args.format, diags, "compile", code);
            code
        }
        Err(d) => {
            super::print_diagnostics(std::slice::from_ref(&d), &compiled.sources, Format::Human);
            d.code.exit_code()
        }
    }
}
