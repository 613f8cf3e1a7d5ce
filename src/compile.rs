//! The compile driver: reads inputs at the edge, runs the pure passes, and returns the
//! artifact tree with every diagnostic. Writing is left to the caller.
//!
//! ```text
//! read pod + .env ─► parse ─► expand ─► [read descriptors] ─► describe ─► register ─► grant ─► project ─► scan
//! ```

use crate::artifact::{Artifact, ArtifactSet, Memo, Output, Recorded, Streamed, Taken};
use crate::describe::Described;
use crate::diag::{Diagnostic, Diagnostics};
use crate::grant::SecretMode;
use crate::image::cache::Cache;
use crate::image::{ImageSet, ImageSource};
use crate::output::sink::Sink;
use crate::pod::env::{Env, parse_dotenv};
use crate::pod::{Pod, parse_pod_on};
use crate::registry::Registry;
use crate::source::fs::{InputRoot, ReadError, read_text};
use crate::source::record::InputLog;
use crate::source::{Declared, Request, Sources, diags as source_diags};
use crate::sourcemap::SourceMap;
use crate::{describe, grant, project, secrets};
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to compile and how.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub pod: PathBuf,
    /// `None` → `<pod dir>/.env` (a missing file is fine).
    pub env_file: Option<PathBuf>,
    /// `--descriptor SERVICE=PATH` overrides.
    pub descriptors: BTreeMap<String, PathBuf>,
    pub secrets: SecretMode,
    /// The process environment (overlays `.env`).
    pub process_env: Vec<(String, String)>,
    /// Where to look for images, in order (`--images`); empty reads none.
    pub images: Vec<ImageSource>,
    /// Files already read out of images, by image ID (`Cache::default()`: none).
    pub image_cache: Cache,
    /// Images read at once (0: the default, 8).
    pub image_jobs: usize,
    /// Threads for the per-agent work (rendering, `report.json`, hashing, writing): 0 for
    /// the default ([`crate::jobs::threads`]). The output is the same bytes whatever it is.
    pub jobs: usize,
    /// `--root`: where inputs must resolve (`None`: the pod's git work tree, else its
    /// directory).
    pub root: Option<PathBuf>,
    /// The pod's git work tree (else its directory), symlinks resolved, when the caller
    /// has found it already (the command line finds it once, with the settings); `None`:
    /// found when needed.
    pub repository: Option<PathBuf>,
    /// `--runner SERVICE=TYPE`: an agent's runner, over what its image or Dockerfile says.
    pub runners: BTreeMap<String, String>,
    /// `--strict`: every warning is an error (promoted after the passes, keeping its code).
    pub strict: bool,
    /// How a promoted warning names the setting that promoted it (default `--strict`).
    pub strict_by: Option<String>,
    /// Where `env_file`, `root`, `descriptors` and `runners` were set (a flag, or a line
    /// of `clawc.toml`), so diagnostics about them say so.
    pub provenance: crate::config::Provenance,
    /// The image sources the lock records (relative to the pod directory), when not
    /// `images`: `--check` passes the committed lock's, so reading the same images from
    /// another source is not drift.
    pub lock_image_sources: Option<Vec<String>>,
    /// Where `--check` keeps its stat records (`None`: it hashes every file; see
    /// `output::record`): `<user cache>/check/v1` unless `--no-cache`.
    pub check_records: Option<PathBuf>,
    /// Where the descriptors a compile decoded are kept for the next compile of the pod
    /// (`None`: every descriptor is decoded; see `describe::Cache`):
    /// `<user cache>/describe/v1` unless `--no-cache`.
    pub describe_cache: Option<PathBuf>,
    /// Where the pod's YAML tree is kept for the next compile of the pod (`None`: the pod
    /// is parsed whole; see `yaml::stored`): `<user cache>/pod/v1` unless `--no-cache`.
    pub pod_cache: Option<PathBuf>,
    /// What earlier compiles in this process kept for this one (`compile --watch`); the
    /// default keeps nothing.
    pub kept: Kept,
}

/// What one compile keeps for the next in the same process, as `compile --watch` does.
/// Each part gives the next compile exactly what doing its work again would give, so a
/// compile cannot tell kept from done; the default keeps nothing. Clones share what is
/// kept.
#[derive(Clone, Debug, Default)]
pub struct Kept {
    /// The descriptors decoded, by their text ([`Decoded::kept`](crate::Decoded::kept)).
    pub decoded: crate::describe::Decoded,
    /// The input files read, replayed while a watch says nothing on their way changed
    /// ([`KeptReads::kept`](crate::KeptReads::kept)).
    pub reads: crate::source::kept::KeptReads,
    /// The pod's YAML tree, spliced where an edit lies inside one service's entry
    /// ([`KeptTree::kept`](crate::KeptTree::kept)).
    pub parsed: crate::yaml::kept::KeptTree,
    /// `report.json`'s index, by the digest of its inputs
    /// ([`KeptIndex::kept`](crate::KeptIndex::kept)).
    pub index: crate::project::index::KeptIndex,
}

impl Kept {
    /// One that keeps every part.
    pub fn all() -> Kept {
        Kept {
            decoded: crate::describe::Decoded::kept(),
            reads: crate::source::kept::KeptReads::kept(),
            parsed: crate::yaml::kept::KeptTree::kept(),
            index: crate::project::index::KeptIndex::kept(),
        }
    }
}

/// The result of a compile: the artifacts (when there was no error) and every diagnostic.
pub struct Compiled {
    pub artifacts: Option<ArtifactSet>,
    pub diagnostics: Diagnostics,
    pub sources: SourceMap,
    pub agents: usize,
    /// Resolved token values → their variable (for scanning committed trees; never printed).
    pub secrets: BTreeMap<String, String>,
    /// The resolved pod, registry and grants (when there was no error), for the questions
    /// `explain`, `who-can` and `report` ask.
    pub analysis: Option<Analysis>,
    /// Every input file the compile read or looked for and found missing, as pod-relative
    /// names (the lock's `inputs`, files only: not images), whether or not it failed: what
    /// `compile --watch` watches. Empty when the pod's input root could not be found.
    pub inputs: Vec<String>,
}

/// What a successful compile resolved.
pub struct Analysis {
    pub pod: Pod,
    pub registry: Registry,
    /// Grants per agent service.
    pub plans: BTreeMap<String, grant::Plan>,
    /// Runner projections of the agents whose tools run natively.
    pub native: BTreeMap<String, crate::project::native::NativePlan>,
    /// Each agent service's skills, merged and judged.
    pub(crate) skills: BTreeMap<String, Vec<crate::skill::carried::Judged>>,
}

impl Compiled {
    /// Exit code for this result: 0, 2 (invalid inputs) or 3 (environment failure).
    pub fn exit_code(&self) -> i32 {
        exit_code(&self.diagnostics)
    }
}

/// The exit code for a run's diagnostics: 0, 2 (invalid inputs) or 3 (environment failure).
pub(crate) fn exit_code(diagnostics: &Diagnostics) -> i32 {
    if !diagnostics.has_errors() {
        0
    } else if diagnostics.errors().any(|d| is_environment_failure(d.code) && !d.promoted) {
        3
    } else {
        2
    }
}

/// Whether an error of `code` is an environment failure (exit 3), as the catalogue says.
pub(crate) fn is_environment_failure(code: crate::diag::Code) -> bool {
    code.is_environment_failure()
}

pub fn compile(opts: &Options) -> Compiled {
    let mut tree = ArtifactSet::default();
    let (mut compiled, _) = compile_into(opts, &mut tree);
    if !compiled.diagnostics.has_errors() {
        compiled.artifacts = Some(tree);
    }
    compiled
}

/// [`compile`], putting the tree into `sink` a batch at a time (`clawc.lock` last) rather
/// than returning it: `artifacts` is `None`. Also returns the sink's first error; the
/// compile's own errors, if any, are in the diagnostics and come first (a sink that
/// failed took only part of the tree).
pub fn compile_into(opts: &Options, sink: &mut dyn Sink) -> (Compiled, Option<Diagnostic>) {
    let mut sources = SourceMap::default();
    let mut diags = Diagnostics::default();
    let mut stream = Stream::new(sink);
    let mut inputs = Vec::new();
    let result = run(opts, &mut sources, &mut diags, &mut stream, &mut inputs);
    // At the boundary, after every pass: the passes raise warnings as the catalogue says,
    // and --strict only changes what the run makes of them.
    if opts.strict {
        diags.promote_warnings(opts.strict_by.as_deref().unwrap_or("--strict"));
    }
    let compiled = match result {
        Some(b) if !diags.has_errors() => Compiled {
            artifacts: None,
            diagnostics: diags.sorted(&sources),
            sources,
            agents: b.agents,
            secrets: b.secrets,
            analysis: Some(b.analysis),
            inputs,
        },
        _ => Compiled {
            artifacts: None,
            diagnostics: diags.sorted(&sources),
            sources,
            agents: 0,
            secrets: BTreeMap::new(),
            analysis: None,
            inputs,
        },
    };
    (compiled, stream.failed)
}

/// Everything the pure core produced, beside the tree.
pub(crate) struct Built {
    pub agents: usize,
    pub secrets: BTreeMap<String, String>,
    pub analysis: Analysis,
}

fn run(
    opts: &Options,
    sources: &mut SourceMap,
    diags: &mut Diagnostics,
    stream: &mut Stream<'_>,
    inputs: &mut Vec<String>,
) -> Option<Built> {
    let log = open_log(opts, sources, diags)?;
    let built = run_logged(opts, &log, sources, diags, stream);
    *inputs = log.entries().into_iter().filter(|(_, e)| e.role != "image").map(|(name, _)| name).collect();
    built
}

fn run_logged(opts: &Options, log: &InputLog, sources: &mut SourceMap, diags: &mut Diagnostics, stream: &mut Stream<'_>) -> Option<Built> {
    let pod_dir = pod_dir(&opts.pod);
    // The pod's tree, and report.json's index beside it, in the user cache (a watch keeps
    // both in memory).
    let pod_kept = kept_for_pod(opts, opts.pod_cache.as_deref());
    let (pod, env) = read_pod_into(opts, log, pod_kept.as_ref(), sources, diags)?;
    let images = match read_images(opts, &pod) {
        Ok(set) => Arc::new(set),
        Err(ds) => {
            diags.extend(ds);
            return None;
        }
    };
    for facts in images.found.values() {
        // The labels that shape the output, so the lock changes when they do.
        let labels: BTreeMap<&String, &String> = facts.info.labels.iter().filter(|(k, _)| k.starts_with("claw.")).collect();
        // Not the executables it has: Docker cannot list them, and the record must be the
        // same whichever source had the image. What they change (a skill's resolution) is
        // in the outputs, and `--check` compiles whenever images are inputs.
        log.record(&facts.reference, "image", Some(&serde_json::to_vec(&labels).expect("labels serialize")));
    }
    for reference in images.missing.keys() {
        // Absent now; its appearance could change the output.
        log.record(reference, "image", None);
    }
    let (operator, ds) = crate::skill::operator::read(&pod, &pod_dir, log, sources);
    diags.extend(ds);
    let registered = register_all(&pod, &pod_dir, opts, &images, log, sources);
    let read = log.entries();
    stream.sink.described(crate::lock::described_digest(read.iter().map(|(p, e)| (p.as_str(), e.role, e.sha256.as_deref()))));
    let described = decode_all(registered, &pod_dir, opts, log, sources, diags);
    let named: BTreeSet<String> = described.iter().filter(|(_, d)| d.descriptor.is_some()).map(|(s, _)| s.clone()).collect();
    diags.extend(crate::image::usage::missing(&pod, &images, &named));
    let skills = skill_inputs(operator, &pod, &pod_dir, log, &described, &images, sources);
    diags.extend(crate::project::skills::lint(&pod, &skills, opts.strict, sources));
    if diags.has_errors() {
        return None;
    }
    let agents = pod
        .services
        .values()
        .filter_map(|s| s.claw.as_ref().filter(|c| c.role == crate::pod::Role::Agent).map(|c| c.agent_ids(&s.name).len()))
        .sum();
    let threads = crate::jobs::threads(opts.jobs);
    let clawc = if stream.sink.reuses() { build_identity() } else { None };
    let index = opts.kept.index.or_stored(pod_kept.map(|(at, b)| (at.with_extension("index"), b)));
    let core = build(pod, described, &skills, &env, opts.secrets, threads, clawc.as_deref(), &index, sources, diags, stream)?;
    let built = crate::lock::Built { outputs: core.outputs, services: &core.analysis.registry.services };
    let lock = crate::lock::build(&log.entries(), sources, &env, &lock_settings(opts), built);
    // The lock is as sensitive as the most sensitive file it describes.
    stream.put_lock(lock, core.secret);
    Some(Built { agents, secrets: core.secrets, analysis: core.analysis })
}

/// The file in `dir` (a directory of the user cache) where what one run of the pod keeps
/// for the next is, and the SHA-256 of the running clawc's identity it is kept for; `None`
/// without a directory, when `dir` lies in the repository under review (its author would
/// write it), or when the pod or the executable cannot be looked at.
fn kept_for_pod(opts: &Options, dir: Option<&Path>) -> Option<(PathBuf, [u8; 32])> {
    let at = crate::disk::cache_path(dir?, &opts.pod, &[repository(opts).path()])?;
    Some((at, crate::digest::sha256(&build_identity()?)))
}

/// What identifies the running clawc for the render keys (`project::reuse`): its version
/// and its executable's device, inode, size and times, so a rebuilt binary never takes
/// files another one rendered. `None` (no reuse) when the executable cannot be looked at.
fn build_identity() -> Option<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata("/proc/self/exe").ok()?;
    let mut id = env!("CARGO_PKG_VERSION").as_bytes().to_vec();
    for n in [
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime().cast_unsigned(),
        m.mtime_nsec().cast_unsigned(),
        m.ctime().cast_unsigned(),
        m.ctime_nsec().cast_unsigned(),
    ] {
        id.extend_from_slice(&n.to_le_bytes());
    }
    Some(id)
}

/// What the skill stage needs from the edge: the operator skills read, each descriptor
/// skill (its text joins the source map), and the CLIs of each agent's image.
fn skill_inputs(
    operator: crate::skill::operator::Read,
    pod: &Pod,
    pod_dir: &Path,
    log: &InputLog,
    described: &BTreeMap<String, Described>,
    images: &ImageSet,
    sources: &mut SourceMap,
) -> crate::project::skills::Inputs {
    use crate::skill::carried::Skill;
    let descriptor: BTreeMap<String, Arc<Skill>> = described
        .iter()
        .filter_map(|(name, d)| {
            let k = d.descriptor.as_ref()?.skill.as_ref()?;
            Some((name.clone(), Arc::new(Skill::file(k.name.clone(), k.source.clone(), k.text.as_str().into(), sources))))
        })
        .collect();
    let mut cli = BTreeMap::new();
    // Only agents that carry a skill need their CLIs (a Dockerfile is read again for them).
    let carries = |c: &crate::pod::Claw| {
        c.role == crate::pod::Role::Agent
            && (!c.skills.is_empty() || c.surfaces.iter().any(|s| s.scheme == "service" && descriptor.contains_key(&s.target)))
    };
    for (name, service) in pod.services.iter().filter(|(_, s)| s.claw.as_ref().is_some_and(carries)) {
        let declared = Declared::from(service);
        let label = crate::source::label(&Request::new(pod_dir, &declared, log), images, crate::project::skills::CLI_LABEL);
        let facts = service.image.as_ref().and_then(|i| images.found.get(&i.value));
        cli.insert(name.clone(), crate::project::skills::clis(label.as_deref(), facts.and_then(|f| f.executables.as_ref())));
    }
    crate::project::skills::Inputs { operator, descriptor, cli }
}

/// Reads and parses the pod and its `.env` (the first pass, up to expanded services),
/// with the log every later read joins.
pub(crate) fn read_pod(opts: &Options, sources: &mut SourceMap, diags: &mut Diagnostics) -> Option<(Pod, Env, InputLog)> {
    let log = open_log(opts, sources, diags)?;
    let stored = kept_for_pod(opts, opts.pod_cache.as_deref());
    let (pod, env) = read_pod_into(opts, &log, stored.as_ref(), sources, diags)?;
    Some((pod, env, log))
}

/// The log of the inputs a compile reads, confined to the pod's input root.
fn open_log(opts: &Options, sources: &mut SourceMap, diags: &mut Diagnostics) -> Option<InputLog> {
    Some(InputLog::new(input_root_in(opts, diags, sources)?).keeping(&opts.kept.reads))
}

/// [`read_pod`], its reads recorded in `log`, the tree kept in `stored` (see
/// [`kept_for_pod`]) spliced where it can be.
fn read_pod_into(
    opts: &Options,
    log: &InputLog,
    stored: Option<&(PathBuf, [u8; 32])>,
    sources: &mut SourceMap,
    diags: &mut Diagnostics,
) -> Option<(Pod, Env)> {
    let pod_dir = pod_dir(&opts.pod);
    let pod_name = pod_name(&opts.pod);
    let text = match log.read(&opts.pod, &pod_name, "pod") {
        Ok(t) => t,
        Err(ReadError::Missing) => {
            diags.push(
                Diagnostic::error(source_diags::MISSING, format!("pod file `{}` does not exist", opts.pod.display()))
                    .help("pass the path of a claw-pod.yml, or run clawc in its directory"),
            );
            return None;
        }
        Err(ReadError::Invalid(d) | ReadError::Io(d)) => {
            diags.push(d);
            return None;
        }
    };
    let pod_file = sources.add(pod_name, text);
    let env = read_env(opts, &pod_dir, sources, diags);
    let tree = match opts.kept.parsed.parse(pod_file, sources.get(pod_file), stored.map(|(at, b)| (at.as_path(), b))) {
        Ok(tree) => tree,
        Err(ds) => {
            diags.extend(ds);
            return None;
        }
    };
    let (pod, ds) = parse_pod_on(pod_file, tree.root(), &env, crate::jobs::threads(opts.jobs));
    opts.kept.parsed.keep(tree);
    diags.extend(ds);
    let pod = pod?;
    // The settings that name services: each is checked against the pod, and a
    // descriptor file before any source tries it, so the message names the flag (or the
    // clawc.toml line) and the value as given.
    let named = opts
        .descriptors
        .iter()
        .map(|(s, p)| ("descriptor", s, p.display().to_string(), Some(p)))
        .chain(opts.runners.iter().map(|(s, t)| ("runner", s, t.clone(), None)));
    for (key, svc, value, path) in named {
        let known = pod.services.contains_key(svc);
        if known && !path.is_some_and(|p| is_missing(p)) {
            continue;
        }
        let given = opts.provenance.locate(&format!("{key}.{svc}"), format!("--{key} {svc}={value}"), sources);
        let d = if known {
            Diagnostic::error(source_diags::MISSING, format!("{}: the descriptor file does not exist", given.what))
                .help(format!("check the path; {}", given.relative_to))
        } else {
            let help = crate::diag::suggest(svc, pod.services.keys().map(String::as_str), "name a service of this pod");
            Diagnostic::error(source_diags::UNKNOWN_SERVICE, format!("{} names \"{svc}\", which is not a service of this pod", given.what))
                .help(help)
        };
        diags.push(d.at_opt(given.loc));
    }
    if diags.has_errors() {
        return None;
    }
    Some((pod, env))
}

/// Whether `path` does not exist (an unreadable one is left for the read to report).
fn is_missing(path: &Path) -> bool {
    std::fs::metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// The git work tree holding the pod, else its directory: as the caller found it, or
/// found now.
pub(crate) fn repository(opts: &Options) -> InputRoot {
    opts.repository.clone().map_or_else(|| InputRoot::discover(&pod_dir(&opts.pod)), InputRoot::found)
}

/// The input root: `--root` (which must exist) or the one discovered from the pod.
pub(crate) fn input_root(opts: &Options, diags: &mut Diagnostics) -> Option<InputRoot> {
    input_root_in(opts, diags, &mut SourceMap::default())
}

fn input_root_in(opts: &Options, diags: &mut Diagnostics, sources: &mut SourceMap) -> Option<InputRoot> {
    let Some(dir) = &opts.root else { return Some(repository(opts)) };
    match InputRoot::new(dir) {
        Ok(r) => Some(r),
        Err(e) => {
            let given = opts.provenance.locate("root", format!("--root {}", dir.display()), sources);
            diags.push(
                Diagnostic::error(source_diags::MISSING, format!("{}: {e}", given.what))
                    .at_opt(given.loc)
                    .help(format!("name an existing directory that holds the pod and its inputs; {}", given.relative_to)),
            );
            None
        }
    }
}

/// The variables a compile sees: the `.env` file (default `<pod dir>/.env`) overlaid by
/// the process environment; `None` when reading them finds anything to say (a `.env` line
/// that is not `KEY=VALUE`, an `--env-file` missing), which only a compile reports.
pub(crate) fn environment(opts: &Options) -> Option<Env> {
    let mut diags = Diagnostics::default();
    let env = read_env(opts, &pod_dir(&opts.pod), &mut SourceMap::default(), &mut diags);
    diags.0.is_empty().then_some(env)
}

/// A compile (or `compile --check`) without compiling: replays `out`'s lock against the
/// inputs (redact mode only), in the environment `env` (see [`environment`]).
pub(crate) fn replay_lock(
    committed: crate::lock::Committed,
    opts: &Options,
    env: &Env,
    out: &Path,
    with: &crate::lock::ReplayWith,
) -> crate::lock::Replay {
    let Some(root) = input_root(opts, &mut Diagnostics::default()) else { return crate::lock::Replay::Unknown };
    crate::lock::replay(committed, out, &pod_dir(&opts.pod), &root, env, &lock_settings(opts), with)
}

/// The settings the lock records (and `--check` replays against).
fn lock_settings(opts: &Options) -> crate::lock::Settings {
    let dir = pod_dir(&opts.pod);
    let relative = |p: &Path| crate::source::fs::relative_name(&dir, &std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    let image_sources = opts.lock_image_sources.clone().unwrap_or_else(|| {
        opts.images
            .iter()
            .map(|s| match s {
                ImageSource::Oci(p) => format!("oci:{}", relative(p)),
                ImageSource::Archive(p) => format!("archive:{}", relative(p)),
                other => other.to_string(),
            })
            .collect()
    });
    crate::lock::Settings {
        mode: opts.secrets,
        images: images_setting(opts),
        image_sources,
        runners: opts.runners.clone(),
        descriptors: opts.descriptors.iter().map(|(svc, p)| (svc.clone(), relative(p))).collect(),
    }
}

/// Whether images were read, as the lock records it (`none` or `read`): a tree compiled
/// without images is never in sync by hashes alone for a compile that reads them. Which
/// source had an image is recorded apart (`image_sources`) and not compared, so Docker,
/// a layout and an archive are in sync alike; every image input (found or missing)
/// already makes `--check` compile.
fn images_setting(opts: &Options) -> String {
    if opts.images.is_empty() { "none" } else { "read" }.to_string()
}

/// The pod's name as the lock records it: its file name.
pub(crate) fn pod_name(pod: &Path) -> String {
    pod.file_name().map_or_else(|| "claw-pod.yml".into(), |n| n.to_string_lossy().into_owned())
}

pub(crate) fn pod_dir(pod: &Path) -> PathBuf {
    let dir = pod.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

fn read_env(opts: &Options, pod_dir: &Path, sources: &mut SourceMap, diags: &mut Diagnostics) -> Env {
    let (path, explicit) = match &opts.env_file {
        Some(p) => (p.clone(), true),
        None => (pod_dir.join(".env"), false),
    };
    let name = crate::source::fs::relative_name(pod_dir, &std::path::absolute(&path).unwrap_or(path.clone()));
    // The default .env is part of the checkout (confined); --env-file is the operator's.
    let root = if explicit { None } else { input_root(opts, &mut Diagnostics::default()) };
    let file_env = match read_text(root.as_ref(), &path, &name) {
        Ok(text) => {
            let id = sources.add_sensitive(name, text);
            let (env, ds) = parse_dotenv(id, sources.get(id));
            diags.extend(ds);
            env
        }
        Err(ReadError::Missing) if !explicit => Env::default(),
        Err(ReadError::Missing) => {
            let given = opts.provenance.locate("env-file", format!("--env-file {}", path.display()), sources);
            diags.push(
                Diagnostic::error(source_diags::MISSING, format!("{}: the file does not exist", given.what))
                    .at_opt(given.loc)
                    .help(format!("check the path ({}), or leave env-file out to use the pod's .env", given.relative_to)),
            );
            Env::default()
        }
        Err(ReadError::Invalid(d) | ReadError::Io(d)) => {
            diags.push(d);
            Env::default()
        }
    };
    // REPO_ROOT defaults to the pod directory; "." keeps host paths out of artifacts.
    let mut env = file_env.overlay(Env::from_pairs(opts.process_env.iter().cloned()));
    env.set_default("REPO_ROOT", ".");
    env
}

/// Describes every service (in name order): its sources read, then the describe stage.
pub(crate) fn describe_all(
    pod: &Pod,
    pod_dir: &Path,
    opts: &Options,
    images: &Arc<ImageSet>,
    log: &InputLog,
    sources: &mut SourceMap,
    diags: &mut Diagnostics,
) -> BTreeMap<String, Described> {
    let registered = register_all(pod, pod_dir, opts, images, log, sources);
    decode_all(registered, pod_dir, opts, log, sources, diags)
}

/// Each service as the sources read it, registered in the source map, in the pod's order.
type Registered<'p> = Vec<(&'p String, Declared, describe::service::Registered)>;

/// [`describe_all`]'s reading: one service at a time, so the source map's file ids keep
/// the services' order.
fn register_all<'p>(
    pod: &'p Pod,
    pod_dir: &Path,
    opts: &Options,
    images: &Arc<ImageSet>,
    log: &InputLog,
    sources: &mut SourceMap,
) -> Registered<'p> {
    let overrides = opts.descriptors.iter().map(|(k, v)| (k.clone(), std::path::absolute(v).unwrap_or(v.clone()))).collect();
    let chain = Sources::standard(overrides, images.clone());
    let mut registered = Vec::with_capacity(pod.services.len() + pod.builtins.len());
    let services: Vec<(&String, Declared)> = pod.services.iter().map(|(name, service)| (name, Declared::from(service))).collect();
    // Each service's descriptor and runner are looked for on every core (a few reads
    // each, most of them of files that are absent: 400 services' took 6 ms on one), then
    // registered in the pod's order, so the source map is the same whatever the threads.
    let found = crate::jobs::map_runs(&services, crate::jobs::threads(opts.jobs), 64, |_, run| {
        let find = |(name, declared): &(&String, Declared)| {
            let req = Request::new(pod_dir, declared, log);
            let loaded = chain.describe(&req);
            let runner = match opts.runners.get(*name) {
                Some(value) => Some(crate::source::RunnerDecl { value: value.clone(), from: "--runner".to_string() }),
                None if declared.agent => crate::source::runner(&req, images),
                None => None,
            };
            describe::service::Input { loaded, runner }
        };
        run.iter().map(find).collect::<Vec<_>>()
    });
    for ((name, declared), input) in services.into_iter().zip(found.into_iter().flatten()) {
        let r = describe::service::register(&declared, input, sources);
        registered.push((name, declared, r));
    }
    for (name, injected) in &pod.builtins {
        let declared = Declared::injected(name, injected);
        let loaded = chain.describe(&Request::new(pod_dir, &declared, log));
        let input = describe::service::Input { loaded, runner: None };
        let r = describe::service::register(&declared, input, sources);
        registered.push((name, declared, r));
    }
    registered
}

/// [`describe_all`]'s decoding, on every core.
fn decode_all(
    registered: Registered<'_>,
    pod_dir: &Path,
    opts: &Options,
    log: &InputLog,
    sources: &SourceMap,
    diags: &mut Diagnostics,
) -> BTreeMap<String, Described> {
    let skills = crate::source::Skills { pod_dir, log };
    opts.kept.decoded.begin();
    // A watch keeps what it decoded in memory instead: the file would hold only what its
    // compiles decoded anew, and be written after each.
    let dir = opts.describe_cache.as_deref().filter(|_| !opts.kept.decoded.keeps());
    let cache = kept_for_pod(opts, dir).map(|(at, build)| describe::Cache::open(at, build));
    let with = describe::service::Decoding { kept: opts.kept.decoded.clone(), cache: cache.as_ref() };
    // Runs of about the same bytes to decode (agents, which have none, sort before the
    // tool services in most pods). Below 64 KiB one thread decodes faster than two start.
    let weight = |(_, _, r): &(_, _, describe::service::Registered)| r.weight(sources);
    let runs = crate::jobs::map_weighted(&registered, crate::jobs::threads(opts.jobs), 64 << 10, weight, |_, run| {
        run.iter().map(|(_, declared, r)| describe::service::decode_registered(declared, r, &skills, sources, &with)).collect::<Vec<_>>()
    });
    let mut out = BTreeMap::new();
    for ((name, _, _), (described, ds)) in registered.iter().zip(runs.into_iter().flatten()) {
        diags.extend(ds);
        out.insert((*name).clone(), described);
    }
    if let Some(cache) = cache {
        cache.store();
    }
    out
}

/// Reads the images the pod names from the `--images` sources (the I/O edge).
pub(crate) fn read_images(opts: &Options, pod: &Pod) -> Result<ImageSet, Vec<Diagnostic>> {
    let overrides: BTreeSet<String> = opts.descriptors.keys().cloned().collect();
    fetch_images(opts, crate::image::usage::references(pod, &overrides))
}

/// Reads `references` (image → whether its files are wanted) from the `--images` sources.
pub(crate) fn fetch_images(opts: &Options, references: BTreeMap<String, bool>) -> Result<ImageSet, Vec<Diagnostic>> {
    if references.is_empty() || opts.images.is_empty() {
        return Ok(ImageSet { disabled: opts.images.is_empty(), ..ImageSet::default() });
    }
    let jobs = if opts.image_jobs == 0 { 8 } else { opts.image_jobs };
    let plan = crate::image::fetch::Plan { references, sources: opts.images.clone(), cache: opts.image_cache.clone(), jobs };
    crate::image::fetch::fetch(&plan)
}

/// What the pure core produced, beside the tree it put into its sink.
pub(crate) struct Core {
    /// Every output's path and the hash the lock records for it (32 bytes, not 64 hex
    /// digits: this table grows with the agents).
    pub outputs: crate::lock::Listed,
    /// Whether any output holds a literal token.
    pub secret: bool,
    pub secrets: BTreeMap<String, String>,
    pub analysis: Analysis,
}

/// The core's side of a [`Sink`]: hashes each batch for the lock, remembers what the
/// lock needs, and stops putting after the sink's first error (kept for the caller).
pub(crate) struct Stream<'s> {
    sink: &'s mut dyn Sink,
    pub failed: Option<Diagnostic>,
    /// Every output put so far and its hash (past the sink's budget, on disk).
    outputs: crate::lock::Listing,
    secret: bool,
}

impl<'s> Stream<'s> {
    pub(crate) fn new(sink: &'s mut dyn Sink) -> Self {
        let outputs = crate::lock::Listing::new(sink.held());
        Stream { sink, failed: None, outputs, secret: false }
    }

    /// Lists `path` as put with `digest`, the list first written out as a sorted run when
    /// it holds the sink's budget (a failure to is the sink's). Once the sink failed,
    /// nothing is listed: no lock is put.
    fn list(&mut self, path: Arc<str>, digest: [u8; 32]) {
        if self.failed.is_none() {
            let sink = &mut *self.sink;
            self.failed = self.outputs.put(path, digest, || sink.spill(), |e| crate::output::write::spill_failed(&e)).err();
        }
    }

    /// Hashes `files` (each distinct rendering once, on up to `threads` threads) and puts
    /// them into the sink; their paths, as listed.
    fn put(&mut self, files: Vec<(String, Artifact)>, secrets: &BTreeMap<String, String>, threads: usize) -> Vec<Arc<str>> {
        let distinct: Vec<&Artifact> = crate::artifact::distinct(&files).map(|(_, a)| a).collect();
        let hashed = crate::jobs::map_runs(&distinct, threads, 256, |_, run| {
            run.iter().map(|a| (a.rendering(), crate::lock::output_digest(a, secrets))).collect::<Vec<_>>()
        });
        let hashes: foldhash::HashMap<(usize, u32), [u8; 32]> = hashed.into_iter().flatten().collect();
        let batch: Vec<Output> = files
            .into_iter()
            .map(|(path, artifact)| {
                let digest = hashes[&artifact.rendering()];
                self.secret |= artifact.secret;
                let path: Arc<str> = path.into();
                self.list(Arc::clone(&path), digest);
                Output { path, artifact, sha256: hex::encode(digest) }
            })
            .collect();
        let paths = batch.iter().map(|o| Arc::clone(&o.path)).collect();
        self.put_hashed(batch);
        paths
    }

    /// Puts one file made as it is written, listed with its digest.
    fn put_streamed(&mut self, path: Arc<str>, file: Streamed<'_>) {
        self.list(Arc::clone(&path), file.digest);
        if self.failed.is_none()
            && let Err(d) = self.sink.put_streamed(path, file)
        {
            self.failed = Some(d);
        }
    }

    /// Stops putting, with `d` (unless the sink already failed).
    fn fail(&mut self, d: Diagnostic) {
        self.failed.get_or_insert(d);
    }

    fn put_hashed(&mut self, batch: Vec<Output>) {
        if self.failed.is_none()
            && let Err(d) = self.sink.put(batch)
        {
            self.failed = Some(d);
        }
    }

    /// Puts the lock, last; `secret` when any output holds a literal token.
    fn put_lock(&mut self, lock: crate::lock::Pending, secret: bool) {
        if self.failed.is_none()
            && let Err(d) = self.sink.lock(lock, secret)
        {
            self.failed = Some(d);
        }
    }
}

/// The pure core after describe: register → grant → project → leak scan, the tree put
/// into `stream` a batch of agent services at a time (the per-agent work on up to
/// `threads` threads); everything but the lock. `clawc` identifies the build (see
/// `build_identity`) when the sink may hold renderings to reuse; `None`: render all.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    pod: Pod,
    described: BTreeMap<String, Described>,
    skills: &crate::project::skills::Inputs,
    env: &Env,
    mode: grant::SecretMode,
    threads: usize,
    clawc: Option<&[u8]>,
    index: &project::index::KeptIndex,
    sources: &SourceMap,
    diags: &mut Diagnostics,
    stream: &mut Stream<'_>,
) -> Option<Core> {
    let (registry, ds) = Registry::build(described, sources);
    diags.extend(ds);
    let (plans, ds) = grant::resolve_on(&pod, &registry, env, mode, threads);
    diags.extend(ds);
    if diags.has_errors() {
        return None;
    }
    let (native, ds) = project::native::plan(&pod, &registry, &plans);
    diags.extend(ds);
    diags.extend(project::native::warnings(&native, &pod, mode));
    let (skills, ds) = crate::project::skills::judge_all(&pod, &registry, &plans, &native, skills, sources);
    diags.extend(ds);
    if diags.has_errors() {
        return None;
    }
    let secrets = secrets::collect(&plans);
    // The scan's warnings (tokens too short to look for) once; each batch adds its leaks.
    diags.extend(secrets::scan_files(std::iter::empty(), &secrets, sources, pod.file));
    // A sink that may hold what the previous compile rendered (the caller passes `clawc`
    // only for one: `Sink::reuses`) is asked for each service by its render key, before
    // rendering it.
    let resolved = project::reuse::Resolved { pod: &pod, reg: &registry, plans: &plans, natives: &native, skills: &skills };
    let keys = clawc
        .filter(|_| mode == SecretMode::Redact)
        .map(|clawc| project::reuse::Keys::of(&project::reuse::Context { clawc, sources, secrets: &secrets, threads }, &resolved))
        .unwrap_or_default();
    // report.json, the index, holds every warning (the scan's too): the projection adds
    // none (only leaks, which are errors), so it is put first, before the list of what is
    // put and the memo have grown (made last, its 3.4 MB at 30,000 agent ids were the
    // largest block at the peak). It holds no token in either mode; scan it on its own.
    // Past the sink's budget (a pod of about 10,000 agent ids) it is never held: made once
    // to be scanned and hashed, and again only where the sink writes it.
    let warnings: Vec<Diagnostic> = diags.sorted_clone(sources).warnings().cloned().collect();
    let report = index.index(&pod, &registry, &plans, sources, &warnings, stream.sink.held());
    let mut scan = secrets::Scanning::new(&secrets);
    let looked = match &report {
        project::index::Index::Held(bytes) => {
            scan.feed(bytes);
            Ok(None)
        }
        project::index::Index::Streamed(_) => look(&report, &mut scan).map(Some),
    };
    diags.extend(scan.leaks(project::REPORT, &secrets, sources, pod.file));
    if diags.has_errors() {
        return None;
    }
    match (report, looked) {
        (project::index::Index::Held(bytes), _) => {
            stream.put(vec![(project::REPORT.to_string(), Artifact { bytes, secret: false, executable: false })], &secrets, 1);
        }
        (report, Ok(Some((digest, len)))) => {
            stream.put_streamed(project::REPORT.into(), Streamed { digest, len, write: &|w| report.write(w) });
        }
        // (Only rendering can fail a streamed index's making into a hash and a scan.)
        (_, looked) => {
            let why = looked.err().map_or_else(String::new, |e| format!(": {e}"));
            stream.fail(Diagnostic::error(crate::diag::catalogue::output::IO, format!("cannot make `{}`{why}", project::REPORT)));
        }
    }
    let mut take = Projecting {
        pod: &pod,
        registry: &registry,
        native: &native,
        mode,
        secrets: &secrets,
        sources,
        threads,
        diags,
        stream,
        keys,
        leaked: false,
    };
    project::project(&pod, &registry, &plans, &native, &skills, sources, threads, &mut take);
    let Projecting { diags, stream, .. } = take;
    debug_assert!(diags.sorted_clone(sources).warnings().eq(&warnings), "the index was put with every warning");
    if diags.has_errors() {
        return None;
    }
    let outputs = std::mem::replace(&mut stream.outputs, crate::lock::Listing::new(usize::MAX)).finish();
    Some(Core { outputs, secret: stream.secret, secrets, analysis: Analysis { pod, registry, plans, native, skills } })
}

/// Makes `report` once through `scan`, hashing it: its digest and length.
fn look(report: &project::index::Index<'_>, scan: &mut secrets::Scanning) -> std::io::Result<([u8; 32], u64)> {
    let mut through = std::io::BufWriter::with_capacity(crate::artifact::STREAMED_BUFFER, crate::digest::Hashing::new(scan));
    report.write(&mut through)?;
    Ok(through.into_inner().map_err(std::io::IntoInnerError::into_error)?.finish())
}

/// What the projection's batches go through: the leak scan (projection runs redacted,
/// and the scan reads that before anything is put; with inline tokens only the files that
/// carry them are rendered again; after a leak the rest is still scanned, so every leak is
/// reported, but nothing more is put), then the stream. Services the sink still holds by
/// their render key are not rendered; what is rendered is remembered by its key.
struct Projecting<'a, 'b, 's> {
    pod: &'a Pod,
    registry: &'a Registry,
    native: &'a BTreeMap<String, project::native::NativePlan>,
    mode: SecretMode,
    secrets: &'b BTreeMap<String, String>,
    sources: &'b SourceMap,
    threads: usize,
    diags: &'b mut Diagnostics,
    stream: &'b mut Stream<'s>,
    keys: project::reuse::Keys,
    leaked: bool,
}

impl<'a> project::Take<'a> for Projecting<'a, '_, '_> {
    fn reused(&mut self, services: &[&'a str]) -> Vec<bool> {
        let wanted: Vec<(&str, &[u8; 32])> = services.iter().filter_map(|s| Some((*s, self.keys.0.get(*s)?))).collect();
        if wanted.is_empty() || self.stream.failed.is_some() {
            return vec![false; services.len()];
        }
        let reused = self.stream.sink.reuse(&wanted);
        let listed = self.stream.sink.listed();
        self.stream.outputs.reserve(listed);
        let mut taken = BTreeSet::new();
        let mut memo = Memo::default();
        for ((service, key), from_tree) in wanted.iter().zip(reused) {
            let Some(Taken { files, digests }) = from_tree else { continue };
            for (f, digest) in files.iter().zip(digests) {
                self.stream.list(f.path.clone(), digest);
            }
            memo.0.insert(service.to_string(), (**key, files));
            taken.insert(*service);
        }
        self.stream.sink.remember(memo, true);
        services.iter().map(|s| taken.contains(s)).collect()
    }

    fn rendered(&mut self, services: &project::Services<'a>, files: Vec<Vec<(String, Artifact)>>) {
        let groups: Vec<(&str, Vec<(String, u32)>)> = services
            .iter()
            .zip(&files)
            .filter(|((s, _), _)| self.keys.0.contains_key(s.as_str()))
            .map(|((s, _), f)| (s.as_str(), f.iter().map(|(p, a)| (p.clone(), a.mode())).collect()))
            .collect();
        let files: Vec<(String, Artifact)> = files.into_iter().flatten().collect();
        let leaks = secrets::scan(&files, self.secrets, self.sources, self.pod.file);
        self.leaked |= !leaks.is_empty();
        self.diags.extend(leaks);
        if self.leaked {
            return;
        }
        let files = if self.mode == SecretMode::Redact {
            files
        } else {
            with_inline(files, project::inline(self.pod, self.registry, services, self.native))
        };
        let put = self.stream.put(files, self.secrets, self.threads);
        let put: foldhash::HashMap<&str, &Arc<str>> = put.iter().map(|p| (&**p, p)).collect();
        let mut memo = Memo::default();
        for (service, paths) in groups {
            // All of a service's files or none: a memo that left one out would have the next
            // compile take the service without it.
            let recorded: Option<Vec<Recorded>> =
                paths.into_iter().map(|(path, mode)| put.get(path.as_str()).map(|p| Recorded { path: Arc::clone(p), mode })).collect();
            if let Some(recorded) = recorded {
                memo.0.insert(service.to_string(), (self.keys.0[service], recorded));
            }
        }
        self.stream.sink.remember(memo, false);
    }
}

/// `files` with those of `inline` put in place of the redacted ones at the same paths.
fn with_inline(mut files: Vec<(String, Artifact)>, inline: Vec<(String, Artifact)>) -> Vec<(String, Artifact)> {
    let mut at: std::collections::HashMap<String, Artifact> = inline.into_iter().collect();
    for (path, a) in &mut files {
        if let Some(literal) = at.remove(path) {
            *a = literal;
        }
    }
    let mut rest: Vec<(String, Artifact)> = at.into_iter().collect();
    rest.sort_by(|a, b| a.0.cmp(&b.0));
    files.extend(rest);
    files
}
