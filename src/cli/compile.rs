//! `clawc compile`.

use super::Format;
use super::check::{Answer, DiffMode};
use super::inputs::{PodArgs, StrictArg, options};
use super::watch::Idle;
use crate::Options;
use crate::config::{self, From};
use crate::diag::{Diagnostic, Severity};
use crate::grant::SecretMode;
use crate::image::ImageSource;
use crate::lock::{Replay, ReplayWith};
use crate::output::check::Drift;
use crate::output::write::{WriteOptions, WriteSummary, Writer};
use crate::sourcemap::SourceMap;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
#[command(
    about = "Compile a pod into per-agent artifacts (tools.json, feeds.json, memory.json, CLAWDAPUS.md, report.json)",
    after_help = "Settings left off the command line come from CLAWC_IMAGES, then the nearest clawc.toml (the pod's directory up to the repository root), then the defaults; `clawc config` shows them (docs/config.md).

Exit codes: 0 compiled (with --check: in sync) · 1 --check only: drift, or a token value in the committed tree · 2 invalid inputs, settings or command line, or a warning with --strict (diagnostics printed, nothing written) · 3 environment failure: I/O, the Docker Engine unreachable with --images docker, an image the pod uses that no source has, an --out clawc refuses to write, interrupted before the commit (the previous tree is left as it was)."
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
    /// How bearer tokens are written: `redact` writes ${VAR} (safe to commit), `inline` writes values with mode 0600 (not with --check, which compares redacted trees) [default: redact]
    #[arg(long, value_enum)]
    secrets: Option<Secrets>,
    /// Output format for diagnostics and the summary
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Compile in memory (redacted) and compare with the tree in --out; write nothing. Exit 0 in sync, 1 drift
    #[arg(long)]
    check: bool,
    /// With --check: how much of each difference to show
    #[arg(long, value_enum, default_value_t = DiffMode::Full, requires = "check")]
    diff: DiffMode,
    /// Compile, then compile again whenever an input changes (the pod, its .env and
    /// includes, descriptors, snapshots, skills, clawc.toml), until Ctrl-C; exits with the
    /// last compile's code. Linux only
    #[arg(long, conflicts_with = "check")]
    watch: bool,
    #[command(flatten)]
    strict: StrictArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Secrets {
    Redact,
    Inline,
}

pub(super) fn run(args: CompileArgs) -> i32 {
    if args.check && args.secrets == Some(Secrets::Inline) {
        // A committed tree must not hold token values (--check fails one that does), so
        // comparing against an inline compile could only ever fail.
        let e = clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            "--check compares redacted trees, so --secrets inline cannot be used with it (a committed tree must never hold token values)\n",
        );
        let _ = e.with_cmd(&super::command()).print();
        return 2;
    }
    if !args.check {
        crate::output::write::watch_signals();
    }
    if args.watch {
        // Descriptors decoded, input files read and the pod's tree of one compile are kept
        // for the next.
        let kept = crate::Kept::all();
        return super::watch::run(args.format, &kept.reads, |idle| once(&args, idle, &kept));
    }
    once(&args, None, &crate::Kept::default()).code
}

/// What one compile of a `--watch` (or the only one) leaves: its exit code, the input
/// files to watch for the next, and the tree it wrote, read while the watch waits.
pub(super) struct Once {
    pub code: i32,
    pub inputs: Vec<PathBuf>,
    pub idle: Option<Idle>,
}

/// One `clawc compile`, starting from `idle` (what a watch read of `--out` since the last
/// compile) when it is given, and from what `kept` holds of earlier compiles.
fn once(args: &CompileArgs, idle: Option<Idle>, kept: &crate::Kept) -> Once {
    let pod_dir = crate::compile::pod_dir(&args.pod);
    // Whatever happens, the pod and the settings it names are inputs to watch.
    let mut inputs = vec![args.pod.clone()];
    inputs.extend(args.input.env_file.iter().cloned());
    inputs.extend(args.input.config.iter().cloned());
    // A run that leaves nothing read for a watch to start from.
    let ended = |code: i32, inputs: Vec<PathBuf>| Once { code, inputs, idle: None };
    let secrets = match args.secrets {
        Some(Secrets::Inline) => SecretMode::Inline,
        _ => SecretMode::Redact,
    };
    let mut settings = match args.input.settings(&crate::compile::pod_dir(&args.pod), args.out.as_ref(), Some(&args.strict)) {
        Ok(s) => s,
        Err(r) if args.check && args.format == Format::Json => {
            super::check::print(&[], args.diff, "", args.format, json_values(&r.diagnostics, &r.sources), Answer::Compile, r.code);
            return ended(r.code, inputs);
        }
        Err(r) => {
            r.print(args.format);
            if args.format == Format::Human {
                eprintln!("error: the settings are invalid; nothing was compiled or written");
            } else {
                println!(
                    "{}",
                    serde_json::json!({ "summary": { "status": "failed", "exit_code": r.code, "errors": r.diagnostics.len(), "warnings": 0, "agents": 0 } })
                );
            }
            // The settings files looked for (the one at fault among them).
            inputs.extend(settings_files(&pod_dir, None));
            return ended(r.code, inputs);
        }
    };
    inputs.extend(settings_files(&pod_dir, Some(&settings)));
    let out = settings.out.value.clone().unwrap_or_else(|| {
        args.pod.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), PathBuf::from).join(".claw-compiled")
    });
    let mut opts = options(&args.pod, &settings, secrets);
    opts.kept = kept.clone();
    // The settings were looked for from the pod's directory: their repository is the pod's.
    opts.repository = Some(settings.repository.clone());
    // Never a stat record in the repository under review (its author would write it).
    let repo = crate::compile::repository(&opts);
    let untrusted = [repo.path()];
    if args.check {
        // The committed lock is read once: for its image sources here, and for the replay.
        let committed = crate::lock::committed(&out, opts.check_records.as_deref(), &untrusted);
        if let Some(c) = &committed {
            recorded_images(&mut settings, &mut opts, &c.lock);
        }
        if let Some(code) = committed.and_then(|c| check_from_lock(c, args, &settings, &opts, &out)) {
            return ended(code, inputs);
        }
    }
    let records = (opts.check_records.as_deref(), &untrusted[..]);
    if args.check {
        // Compared with `out` as it is compiled, a batch at a time, like the write: the
        // check keeps what differs, not the tree.
        let mut drift = Drift::new(&out, secrets == SecretMode::Redact, records.0, records.1);
        let (compiled, refused) = crate::compile::compile_into(&opts, &mut drift);
        if args.format == Format::Human {
            super::print_diagnostics(&compiled.diagnostics.0, &compiled.sources, args.format);
        }
        if compiled.diagnostics.has_errors() {
            if args.format == Format::Json {
                super::check::print(&[], args.diff, "", args.format, json_diags(&compiled), Answer::Compile, compiled.exit_code());
            } else {
                summary(args.format, "failed", compiled.exit_code(), None, &Tally::of(&compiled));
            }
            return ended(compiled.exit_code(), inputs);
        }
        let found = match refused {
            Some(d) => Err(d),
            None => drift.finish(&compiled.secrets),
        };
        return ended(check(args, &settings, found, &compiled), inputs);
    }
    // Nothing to write: only the summary, as a no-op check answers (a watch compiles, for
    // what it keeps of a compile for the next).
    if !args.watch
        && let Some(code) = unchanged(args, &opts, &out, records)
    {
        return ended(code, inputs);
    }
    // The tree is written as it is compiled, a batch of agent services at a time, so the
    // compile never holds it whole; nothing in `out` changes before the commit, after the
    // last batch, and a compile that fails removes what it staged.
    let write = WriteOptions { strict: opts.strict, jobs: opts.jobs, records: records.0, untrusted: records.1, held: 0 };
    let redacted = secrets == SecretMode::Redact;
    let mut writer = Writer::new(&out, write, redacted);
    // What a watch read while it waited, if nothing under `out` changed since; its watch
    // is closed once the compile is reported (closing it takes milliseconds).
    #[cfg(target_os = "linux")]
    let unwatch = idle.map(|idle| writer.read_idle(idle));
    #[cfg(not(target_os = "linux"))]
    let unwatch: Option<()> = idle.map(|idle| match idle {});
    // With a core to spare, what the previous compile left is read while the inputs are.
    if unwatch.is_none() && crate::jobs::threads(opts.jobs) > 1 {
        writer.read_ahead();
    }
    let (compiled, refused) = crate::compile::compile_into(&opts, &mut writer);
    inputs.extend(compiled.inputs.iter().map(|name| crate::source::fs::normalize(&pod_dir.join(name))));
    inputs.extend(opts.descriptors.values().cloned());
    super::print_diagnostics(&compiled.diagnostics.0, &compiled.sources, args.format);
    if compiled.diagnostics.has_errors() {
        drop(writer);
        summary(args.format, "failed", compiled.exit_code(), None, &Tally::of(&compiled));
        return ended(compiled.exit_code(), inputs);
    }
    let (written, keeping) = match refused.map_or_else(|| writer.finish_first(&compiled.secrets), Err) {
        Ok((summary, keeping)) => (Ok(summary), Some(keeping)),
        Err(d) => (Err(d), None),
    };
    let code = report_write(written, args, &settings, &compiled, &out);
    // The stat record and the render memo for the next compile, once this one is reported
    // (the tree is whole; a compile waiting for the lock of `--out` waits for them too).
    if !args.watch {
        // The process ends next: what the write held, and the resolved pod, registry and
        // plans, are left to the exit rather than freed piece by piece (2–3 ms at 3,000
        // agent ids).
        if let Some(keeping) = keeping {
            keeping.keep_exiting();
        }
        std::mem::forget(compiled);
        return ended(code, inputs);
    }
    drop((keeping, compiled, unwatch));
    // The tree just written, read while the watch waits for an edit.
    #[cfg(target_os = "linux")]
    let idle = if code == 0 { Idle::prepare(&out, &write, redacted) } else { None };
    #[cfg(not(target_os = "linux"))]
    let idle = None;
    Once { code, inputs, idle }
}

/// The settings files a run reads or looks for: the `clawc.toml` found, else one in each
/// directory from the pod's up to where the search stops.
fn settings_files(pod_dir: &Path, settings: Option<&config::Effective>) -> Vec<PathBuf> {
    let Some(settings) = settings else { return vec![pod_dir.join("clawc.toml")] };
    if let Some(file) = &settings.file {
        return vec![crate::source::fs::normalize(&pod_dir.join(&file.name))];
    }
    let Some((from, root)) = &settings.searched else { return Vec::new() };
    from.ancestors().take_while(|d| d.starts_with(root)).map(|d| d.join("clawc.toml")).collect()
}

/// Prints what the write did (or why it did not) and returns the exit code.
fn report_write(
    written: Result<crate::output::write::WriteSummary, Diagnostic>,
    args: &CompileArgs,
    settings: &config::Effective,
    compiled: &crate::Compiled,
    out: &Path,
) -> i32 {
    match written {
        Ok(w) if w.refused => {
            let mut held = crate::diag::Diagnostics(w.warnings.clone());
            held.promote_warnings(&settings.strict_by());
            super::print_diagnostics(&held.0, &compiled.sources, args.format);
            if args.format == Format::Human {
                eprintln!("error: the compiled tree was not written (a warning with --strict)");
            } else {
                summary(args.format, "failed", 2, None, &Tally::of(compiled));
            }
            2
        }
        Ok(w) => {
            super::print_diagnostics(&w.warnings, &compiled.sources, args.format);
            summary(args.format, "ok", 0, Some((&w, out)), &Tally::of(compiled));
            0
        }
        Err(d) => {
            super::print_diagnostics(std::slice::from_ref(&d), &compiled.sources, args.format);
            let code = d.code.exit_code();
            summary(args.format, "failed", code, None, &Tally::of(compiled));
            code
        }
    }
}

/// `--check`: with no image source named by a flag, variable or clawc.toml, read the
/// images from the sources the committed lock records (a tree is checked the way it was
/// compiled); and whichever sources are read, expect the lock to record the committed
/// ones, since the same images from another source are the same inputs.
fn recorded_images(settings: &mut config::Effective, opts: &mut Options, lock: &crate::lock::Lock) {
    if settings.images.from == From::Default
        && let Some(root) = crate::compile::input_root(opts, &mut crate::diag::Diagnostics::default())
        && let Some(list) = crate::lock::recorded_images(lock, &crate::compile::pod_dir(&opts.pod), &root)
    {
        let list: Vec<ImageSource> = list
            .into_iter()
            .map(|s| match s {
                ImageSource::Oci(p) => ImageSource::Oci(config::shorten(&p)),
                ImageSource::Archive(p) => ImageSource::Archive(config::shorten(&p)),
                other => other,
            })
            .collect();
        opts.images = if list == [ImageSource::None] { Vec::new() } else { list.clone() };
        settings.images = config::Setting { value: list, from: From::Lock };
    }
    if lock.images == "read" && !lock.image_sources.is_empty() && !opts.images.is_empty() {
        opts.lock_image_sources = Some(lock.image_sources.clone());
    }
}

/// What a summary counts of a compile: its agent ids, errors and warnings.
struct Tally {
    agents: usize,
    errors: usize,
    warnings: usize,
}

impl Tally {
    fn of(c: &crate::Compiled) -> Self {
        let errors = c.diagnostics.0.iter().filter(|d| d.severity == Severity::Error).count();
        Tally { agents: c.agents, errors, warnings: c.diagnostics.0.len() - errors }
    }
}

fn summary(format: Format, status: &str, code: i32, written: Option<(&WriteSummary, &Path)>, tally: &Tally) {
    let &Tally { agents, errors, warnings } = tally;
    match format {
        Format::Human => match written {
            Some((w, out)) => println!(
                "compiled {agents} agent{} into {}: {} written, {} unchanged, {} removed{}",
                if agents == 1 { "" } else { "s" },
                out.display(),
                w.written.len(),
                w.unchanged,
                w.removed.len(),
                if warnings > 0 { format!(" ({warnings} warning{})", if warnings == 1 { "" } else { "s" }) } else { String::new() }
            ),
            None if errors == 0 => eprintln!("error: the compiled tree was not written (see above)"),
            None => eprintln!("error: compile failed with {errors} error{}; nothing was written", if errors == 1 { "" } else { "s" }),
        },
        Format::Json => {
            let w = written.map(|(w, _)| w);
            let s = JsonSummary {
                agents,
                errors,
                exit_code: code,
                out: written.map(|(_, out)| out.display().to_string()),
                removed: w.map(|w| &w.removed[..]),
                reused: w.map(|w| w.reused),
                status,
                unchanged: w.map(|w| w.unchanged),
                warnings,
                written: w.map(|w| &w.written),
            };
            // Streamed (at 30,000 agent ids a fresh compile's line lists 90,000 paths), once
            // the paths are known to read back whole: a line is printed whole or not at all.
            if w.is_none_or(|w| w.written.iter().all(|p| p.is_ok())) {
                use std::io::Write;
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                if serde_json::to_writer(&mut out, &std::collections::BTreeMap::from([("summary", s)])).is_ok() {
                    let _ = out.write_all(b"\n").and_then(|()| out.flush());
                }
            }
        }
    }
}

/// The summary `--format json` prints, its keys in the order `serde_json` sorts a map's
/// (as it printed when it was one): the paths written are the write's own, not copied
/// into a JSON value (90,000 strings on a fresh compile of 30,000 agent ids).
#[derive(serde::Serialize)]
struct JsonSummary<'a> {
    agents: usize,
    errors: usize,
    exit_code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    out: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    removed: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reused: Option<usize>,
    status: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    unchanged: Option<usize>,
    warnings: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    written: Option<&'a crate::output::write::Written>,
}

fn json_diags(c: &crate::Compiled) -> Vec<serde_json::Value> {
    json_values(&c.diagnostics.0, &c.sources)
}

fn json_values(diags: &[Diagnostic], sources: &SourceMap) -> Vec<serde_json::Value> {
    diags.iter().map(|d| serde_json::to_value(d.to_json(sources)).expect("diagnostics serialize")).collect()
}

/// The command that brings the tree in sync: this command line without `--check`. What
/// clawc.toml set is left out (the command reads it again); image sources that came from
/// the environment or the committed lock are spelled out, since the shell that runs the
/// fix may not have them.
fn fix_command(args: &CompileArgs, settings: &config::Effective) -> String {
    let mut cmd = vec!["clawc".to_string(), "compile".to_string(), shell_word(&args.pod.display().to_string())];
    let mut flag = |name: &str, value: String| cmd.extend([name.to_string(), shell_word(&value)]);
    if let Some(o) = &args.out {
        flag("-o", o.display().to_string());
    }
    if let Some(e) = &args.input.env_file {
        flag("--env-file", e.display().to_string());
    }
    if let Some(r) = &args.input.root {
        flag("--root", r.display().to_string());
    }
    for (svc, path) in &args.input.descriptor {
        flag("--descriptor", format!("{svc}={}", path.display()));
    }
    for (svc, ty) in &args.input.runner {
        flag("--runner", format!("{svc}={ty}"));
    }
    let images = &settings.images;
    if matches!(images.from, From::Flag | From::Env(_) | From::Lock) && images.value != [ImageSource::Auto] {
        let list: Vec<String> = images.value.iter().map(std::string::ToString::to_string).collect();
        flag("--images", list.join(","));
    }
    if let Some(c) = &args.input.config {
        flag("--config", c.display().to_string());
    }
    if args.input.no_config {
        cmd.push("--no-config".to_string());
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
fn check_from_lock(
    committed: crate::lock::Committed,
    args: &CompileArgs,
    settings: &config::Effective,
    opts: &Options,
    out: &Path,
) -> Option<i32> {
    // A `.env` line in error is the compile's to report.
    let env = crate::compile::environment(opts)?;
    let want: &[&str] = if opts.strict { &[crate::project::REPORT] } else { &[] };
    let with = ReplayWith { want, mode: None, tokens: None, inputs_first: false };
    let Replay::InSync { outputs, secret_keys, rehashed, .. } = crate::compile::replay_lock(committed, opts, &env, out, &with) else {
        return None;
    };
    // The hashes say nothing about warnings; the committed report lists them. With
    // --strict, a tree compiled with warnings is compiled again so they fail the check.
    if opts.strict && has_warnings(outputs.get(crate::project::REPORT)) {
        return None;
    }
    let secrets = token_values(&secret_keys, &env);
    let leaks = crate::secrets::scan_committed(outputs.iter().map(|(p, b)| (p.as_str(), b.as_slice())), &secrets);
    let sources = SourceMap::default();
    let failed = leaks.iter().any(Diagnostic::is_error);
    if args.format == Format::Human {
        super::print_diagnostics(&leaks, &sources, args.format);
    }
    let diags = json_values(&leaks, &sources);
    let code = i32::from(failed);
    super::check::print(&[], args.diff, &fix_command(args, settings), args.format, diags, Answer::Lock { rehashed }, code);
    Some(code)
}

/// A compile with nothing to write, answered as a no-op `--check` is: the stat record a
/// compile on this machine bound to the lock in `out` shows the inputs, settings and
/// environment that compile read, and every output (and the lock) the file it wrote,
/// contents and mode, so this compile would write the same bytes and nothing else; only
/// its summary is printed, every agent service taken from the tree. `None` compiles: so
/// does a tree whose report lists warnings (a compile prints them every time), or that
/// holds a token value (the compile's leak scan says where), or whose token values are
/// too short to look for, or whose `.env` has a line in error (a compile says so).
fn unchanged(args: &CompileArgs, opts: &Options, out: &Path, records: (Option<&Path>, &[&Path])) -> Option<i32> {
    let root = crate::compile::input_root(opts, &mut crate::diag::Diagnostics::default())?;
    if crate::lock::pod_edited(out, records.0, records.1, &root, (&opts.pod, &crate::compile::pod_name(&opts.pod))) {
        return None;
    }
    let committed = crate::lock::committed(out, records.0, records.1)?;
    // A tree the replay takes is redacted and has no skill folder, the only source of
    // executable files, so clawc writes every file of it, the lock too, with these bits.
    let mode = crate::artifact::Artifact::mode_for(false, false);
    if committed.mode != mode {
        return None;
    }
    let env = crate::compile::environment(opts)?;
    let tokens = crate::secrets::Finder::new(&token_values(&committed.lock.env.secret_keys, &env))?;
    let with = ReplayWith { want: &[crate::project::REPORT], mode: Some(mode), tokens: Some(&tokens), inputs_first: true };
    let Replay::InSync { outputs, listed, .. } = crate::compile::replay_lock(committed, opts, &env, out, &with) else {
        return None;
    };
    let index = IndexView::of(outputs.get(crate::project::REPORT)?).filter(|i| i.warnings.is_empty())?;
    let services: std::collections::BTreeSet<&str> = index.agents.iter().map(|a| a.service.as_str()).collect();
    // The outputs and the lock, all unchanged.
    let w = WriteSummary { unchanged: listed + 1, reused: services.len(), ..WriteSummary::default() };
    summary(args.format, "ok", 0, Some((&w, out)), &Tally { agents: index.agents.len(), errors: 0, warnings: 0 });
    Some(0)
}

/// The token values set for the lock's token variables (`secret_keys`), each with its
/// variable: what a committed tree is scanned for.
fn token_values(keys: &[String], env: &crate::pod::env::Env) -> std::collections::BTreeMap<String, String> {
    keys.iter().filter_map(|k| env.get(k).filter(|v| !v.is_empty()).map(|v| (v.to_string(), k.clone()))).collect()
}

/// What a committed `report.json`'s index says of the compile that wrote it: its agent
/// ids by service, and its warnings.
#[derive(serde::Deserialize)]
struct IndexView {
    agents: Vec<AgentView>,
    warnings: Vec<serde::de::IgnoredAny>,
}

impl IndexView {
    /// `None` for bytes that do not read as an index: only a compile can tell.
    fn of(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

#[derive(serde::Deserialize)]
struct AgentView {
    service: String,
}

/// Whether a report.json lists warnings (one that does not read as a report counts too:
/// only a compile can tell).
fn has_warnings(report: Option<&Vec<u8>>) -> bool {
    let Some(bytes) = report else { return false };
    IndexView::of(bytes).is_none_or(|r| !r.warnings.is_empty())
}

fn check(
    args: &CompileArgs,
    settings: &config::Effective,
    found: Result<Vec<crate::output::check::FileDrift>, Diagnostic>,
    compiled: &crate::Compiled,
) -> i32 {
    match found {
        Ok(mut drift) => {
            // A committed file that matches the compile is as free of tokens as the
            // compile's own output (its leak scan passed); only what differs is scanned.
            let changed = drift.iter().filter(|f| f.kind == crate::output::check::ChangeKind::Update);
            let leaks = crate::secrets::scan_committed(changed.map(|f| (f.path.as_str(), f.old.as_slice())), &compiled.secrets);
            let leaks: Vec<Diagnostic> = leaks.into_iter().filter(Diagnostic::is_error).collect();
            // Never show a token: a committed literal appears as its variable in the diff.
            for f in &mut drift {
                f.old = crate::secrets::mask(&f.old, &compiled.secrets);
                f.new = crate::secrets::mask(&f.new, &compiled.secrets);
            }
            if args.format == Format::Human {
                super::print_diagnostics(&leaks, &compiled.sources, args.format);
            }
            let mut diags = json_diags(compiled);
            diags.extend(json_values(&leaks, &compiled.sources));
            let code = i32::from(!(drift.is_empty() && leaks.is_empty()));
            super::check::print(&drift, args.diff, &fix_command(args, settings), args.format, diags, Answer::Compile, code);
            code
        }
        Err(d) => {
            let code = d.code.exit_code();
            if args.format == Format::Json {
                let mut diags = json_diags(compiled);
                diags.extend(json_values(std::slice::from_ref(&d), &compiled.sources));
                super::check::print(&[], args.diff, "", args.format, diags, Answer::Compile, code);
            } else {
                super::print_diagnostics(std::slice::from_ref(&d), &compiled.sources, Format::Human);
            }
            code
        }
    }
}
