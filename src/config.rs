//! The settings of a run and where each came from. A setting is taken from the first of:
//! the command line, a `CLAWC_*` variable, the repository's `clawc.toml`, the built-in
//! default (`compile --check` adds one step before the default: the image sources the
//! committed `clawc.lock` records).
//!
//! `clawc.toml` is found the way `rustfmt.toml` is: the nearest one in the pod's directory
//! or a parent, up to the root of the git work tree that holds the pod (the pod's
//! directory alone outside a work tree). Discovery never looks above that root: in CI
//! the repository comes from whoever opened the pull request, so the file is untrusted
//! input like the pod. It is read as inputs are (a regular file, confined to the root,
//! through a bounded reader), and every path in it must resolve inside the root too: a
//! file cannot widen what clawc reads or where it writes. `--config FILE` names a file
//! on the operator's authority instead (read from anywhere, paths unconfined), and
//! `--no-config` reads none.
//!
//! The keys are the long flags' names, in one table ([`KEYS`]) that parsing, the "did
//! you mean" of an unknown key and the table in `docs/config.md` all read.

use crate::diag::{Diagnostic, suggest};
use crate::image::ImageSource;
use crate::source::diags as source_diags;
use crate::source::fs::{InputRoot, ReadError, read_text_limited, relative_name};
use crate::sourcemap::{FileId, Loc, SourceFile, SourceMap, Span};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml_edit::{Item, Value};

pub(crate) use crate::diag::catalogue::config as codes;

/// The file's name.
pub(crate) const FILE_NAME: &str = "clawc.toml";
/// Largest `clawc.toml` read: a few settings, never megabytes.
pub(crate) const MAX_BYTES: u64 = 64 * 1024;
/// The variable that sets `images` (between the flag and the file).
pub(crate) const IMAGES_VAR: &str = "CLAWC_IMAGES";

/// The type of a key's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Images,
    Path,
    Bool,
    Jobs,
    /// `SERVICE=PATH`, a string or a list.
    Descriptor,
    /// `SERVICE=TYPE`, a string or a list.
    Runner,
}

/// One key of `clawc.toml`: the long flag it stands for.
pub(crate) struct Key {
    pub name: &'static str,
    kind: Kind,
    /// How the file writes the value.
    pub value: &'static str,
    pub default: &'static str,
    /// The `CLAWC_*` variable between the flag and the file.
    pub env: Option<&'static str>,
    pub meaning: &'static str,
    /// The commands that read it.
    pub used_by: &'static str,
}

const POD_COMMANDS: &str = "compile, explain, who-can, report, describe, compat";
const CHECKING_COMMANDS: &str = "compile, explain, who-can, report";

/// Every key, in the order `clawc config` shows them.
pub(crate) const KEYS: &[Key] = &[
    Key {
        name: "images",
        kind: Kind::Images,
        value: "`\"SOURCE\"` or `[\"SOURCE\", …]`: `auto`, `docker`, `none`, `oci:DIR`, `archive:TAR` (a string is split at commas, as the flag's value is)",
        default: "`auto`",
        env: Some(IMAGES_VAR),
        meaning: "where service images are read from, tried in order ([images.md](images.md))",
        used_by: POD_COMMANDS,
    },
    Key {
        name: "out",
        kind: Kind::Path,
        value: "`\"DIR\"`",
        default: "`<pod dir>/.claw-compiled`",
        env: None,
        meaning: "where `compile` writes the tree (and `--check` reads it)",
        used_by: "compile",
    },
    Key {
        name: "env-file",
        kind: Kind::Path,
        value: "`\"FILE\"`",
        default: "`<pod dir>/.env` (may be missing)",
        env: None,
        meaning: "variables for `${VAR}` placeholders and auth tokens; a file named here must exist",
        used_by: POD_COMMANDS,
    },
    Key {
        name: "descriptor",
        kind: Kind::Descriptor,
        value: "`\"SERVICE=PATH\"` or a list of them",
        default: "none",
        env: None,
        meaning: "a service's descriptor, over every other source; a `--descriptor` flag replaces the file's entry for its service only",
        used_by: POD_COMMANDS,
    },
    Key {
        name: "runner",
        kind: Kind::Runner,
        value: "`\"SERVICE=TYPE\"` or a list of them",
        default: "none",
        env: None,
        meaning: "the runner of a native agent ([runners.md](runners.md)); a `--runner` flag replaces the file's entry for its service only",
        used_by: POD_COMMANDS,
    },
    Key {
        name: "root",
        kind: Kind::Path,
        value: "`\"DIR\"`",
        default: "the git work tree holding the pod, else the pod's directory",
        env: None,
        meaning: "inputs must resolve inside it; in a file it can only narrow the default (it must lie inside it)",
        used_by: POD_COMMANDS,
    },
    Key {
        name: "no-cache",
        kind: Kind::Bool,
        value: "`true` or `false`",
        default: "`false`",
        env: None,
        meaning: "neither use nor fill the cache of files read out of images, the stat record (a `--check` then compiles, and a recompile reads every file), nor the descriptors kept decoded, the pod's tree kept parsed and `report.json`'s index kept (every descriptor is decoded, the pod parsed whole, the index rendered)",
        used_by: POD_COMMANDS,
    },
    Key {
        name: "image-jobs",
        kind: Kind::Jobs,
        value: "an integer from 1 to 256",
        default: "`8`",
        env: None,
        meaning: "how many images are inspected and read at once",
        used_by: POD_COMMANDS,
    },
    Key {
        name: "strict",
        kind: Kind::Bool,
        value: "`true` or `false`",
        default: "`false`",
        env: None,
        meaning: "every warning is an error (exit 2, nothing written); the diagnostic keeps its code",
        used_by: CHECKING_COMMANDS,
    },
];

/// Flags only the command line may set, and why.
const COMMAND_LINE_ONLY: &[(&str, &str)] = &[
    (
        "secrets",
        "whether token values are written is decided by whoever runs clawc (`claw up` passes --secrets inline), never by a file in the repository",
    ),
    ("format", "the output format is the caller's: a file must not change what a script parses"),
    ("check", "whether to write is the caller's choice"),
    ("watch", "a compile that never ends is the caller's choice: from a file, every hook and CI run would hang"),
    ("diff", "it only changes what --check prints; pass it on the command line"),
    ("jobs", "how many threads a compile uses is the running machine's business, and the output is the same bytes whatever it is"),
    ("config", "a config file cannot name another"),
    ("no-config", "a config file cannot turn itself off"),
];

/// Where a setting's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum From {
    Flag,
    Env(&'static str),
    /// A key of the config file: where its value is.
    File(Span),
    /// `compile --check`: the image sources the committed lock records.
    Lock,
    Default,
}

/// A value and where it came from.
#[derive(Clone, Debug)]
pub(crate) struct Setting<T> {
    pub value: T,
    pub from: From,
}

impl<T> Setting<T> {
    fn new(value: T, from: From) -> Self {
        Setting { value, from }
    }
}

/// Which config file to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Choice {
    /// The nearest `clawc.toml` (see the module docs).
    #[default]
    Discover,
    /// `--config FILE`.
    File(PathBuf),
    /// `--no-config`.
    Nothing,
}

/// What the command line gave (`None` or empty: not given).
#[derive(Clone, Debug, Default)]
pub(crate) struct Given {
    pub images: Vec<ImageSource>,
    pub out: Option<PathBuf>,
    pub env_file: Option<PathBuf>,
    pub descriptors: Vec<(String, PathBuf)>,
    pub runners: Vec<(String, String)>,
    pub root: Option<PathBuf>,
    pub no_cache: Option<bool>,
    pub image_jobs: Option<u16>,
    /// `--jobs` (command line only).
    pub jobs: Option<u16>,
    pub strict: Option<bool>,
    pub choice: Choice,
}

/// The config file that was read.
#[derive(Clone, Debug)]
pub(crate) struct ConfigFile {
    /// How clawc names it: relative to the pod's directory, as every file it names.
    pub name: String,
    pub text: Arc<str>,
}

/// The settings of a run.
#[derive(Clone, Debug)]
pub(crate) struct Effective {
    pub file: Option<ConfigFile>,
    /// Where discovery looked and stopped: the pod's directory and the root (`None` with
    /// `--config` or `--no-config`).
    pub searched: Option<(PathBuf, PathBuf)>,
    /// `[ImageSource::None]` for `none`.
    pub images: Setting<Vec<ImageSource>>,
    /// `None`: `<pod dir>/.claw-compiled`.
    pub out: Setting<Option<PathBuf>>,
    /// `None`: `<pod dir>/.env`.
    pub env_file: Setting<Option<PathBuf>>,
    pub descriptors: BTreeMap<String, Setting<PathBuf>>,
    pub runners: BTreeMap<String, Setting<String>>,
    /// `None`: the git work tree holding the pod, else its directory.
    pub root: Setting<Option<PathBuf>>,
    pub no_cache: Setting<bool>,
    pub image_jobs: Setting<u16>,
    /// Threads for the per-agent work (`--jobs`; 0: [`crate::jobs::threads`]' default).
    pub jobs: usize,
    pub strict: Setting<bool>,
    /// The git work tree holding the directory the settings were looked for from (else
    /// that directory), symlinks resolved: found once here, for what else needs it.
    pub repository: PathBuf,
}

/// Settings that could not be worked out: the diagnostics, with the file they point into.
pub(crate) struct Failed {
    pub diagnostics: Vec<Diagnostic>,
    pub sources: SourceMap,
}

impl Failed {
    pub(crate) fn exit_code(&self) -> i32 {
        crate::compile::exit_code(&crate::diag::Diagnostics(self.diagnostics.clone()))
    }
}

impl Effective {
    /// Where the settings that compile reports on were set, for its diagnostics.
    pub(crate) fn provenance(&self) -> Provenance {
        let mut spans = BTreeMap::new();
        let mut note = |key: String, from: &From| {
            if let From::File(span) = from {
                spans.insert(key, *span);
            }
        };
        note("env-file".into(), &self.env_file.from);
        note("root".into(), &self.root.from);
        for (svc, s) in &self.descriptors {
            note(format!("descriptor.{svc}"), &s.from);
        }
        for (svc, s) in &self.runners {
            note(format!("runner.{svc}"), &s.from);
        }
        Provenance { file: self.file.clone().filter(|_| !spans.is_empty()), spans }
    }

    /// The `strict` setting as the message of a promoted warning names it.
    pub(crate) fn strict_by(&self) -> String {
        match (&self.strict.from, &self.file) {
            (From::File(span), Some(f)) => format!("`strict = true` at {}:{}", f.name, span.line),
            _ => "--strict".to_string(),
        }
    }
}

/// Where a compile's settings were given, so a diagnostic about one (a missing
/// `--env-file`, an unknown `--descriptor` service) names the flag and value, or points at
/// the line of `clawc.toml` that set it.
#[derive(Clone, Debug, Default)]
pub struct Provenance {
    file: Option<ConfigFile>,
    /// `env-file`, `root`, `descriptor.<service>`, `runner.<service>` → the value's span.
    spans: BTreeMap<String, Span>,
}

/// How a diagnostic names a setting and where it points.
pub(crate) struct Located {
    /// `--env-file x.env`, or `env-file = "x.env" in ../clawc.toml`.
    pub what: String,
    pub loc: Option<Loc>,
    /// What a relative path in it is relative to.
    pub relative_to: &'static str,
}

impl Provenance {
    /// `key` as `flag` (the command line's words) or as the file wrote it, adding the file
    /// to `sources` when it points there.
    pub(crate) fn locate(&self, key: &str, flag: String, sources: &mut SourceMap) -> Located {
        match (&self.file, self.spans.get(key)) {
            (Some(f), Some(span)) => {
                let id: FileId = sources.add(f.name.clone(), f.text.clone());
                let raw = f.text.get(span.start..span.end).unwrap_or_default();
                let name = key.split('.').next().unwrap_or(key);
                Located {
                    what: format!("{name} = {raw} in {}", f.name),
                    loc: Some(Loc { file: id, span: *span }),
                    relative_to: "a path in clawc.toml is relative to the file's directory",
                }
            }
            _ => Located { what: flag, loc: None, relative_to: "a path on the command line is relative to the current directory" },
        }
    }
}

/// Works out the settings: the command line's (`given`), the variables `env` answers,
/// and the config file `given` chooses (discovered from `start`, the pod's directory for
/// the pod commands).
pub(crate) fn load(given: &Given, start: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Effective, Failed> {
    let mut diags = Vec::new();
    let mut sources = SourceMap::default();
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    let repository = InputRoot::discover_real(&start);
    // What paths of a discovered file must stay inside: the operator's --root if given.
    let bound = given.root.as_deref().and_then(|r| InputRoot::new(r).ok()).unwrap_or_else(|| repository.clone());
    let (file, searched) = match &given.choice {
        Choice::Nothing => (None, None),
        Choice::File(path) => (read(path, None, &start, &mut diags), None),
        Choice::Discover => {
            let found = start.ancestors().take_while(|d| d.starts_with(repository.path())).map(|d| d.join(FILE_NAME)).find(|p| {
                // Any entry counts (a FIFO or a symlink is refused by the read, not skipped).
                p.symlink_metadata().is_ok()
            });
            let file = found.and_then(|p| read(&p, Some(&repository), &start, &mut diags));
            (file, Some((start.clone(), repository.path().to_path_buf())))
        }
    };
    let mut values = FileValues::default();
    if let Some((path, f)) = &file {
        let id = sources.add(f.name.clone(), f.text.clone());
        let confine = matches!(given.choice, Choice::Discover).then_some((&bound, &repository));
        values = parse(sources.get(id), id, path.parent().unwrap_or(Path::new(".")), confine, &mut diags);
    }
    let mut effective = merge(given, values, file.map(|(_, f)| f), searched, env, &mut diags);
    effective.repository = repository.path().to_path_buf();
    if diags.is_empty() { Ok(effective) } else { Err(Failed { diagnostics: diags, sources }) }
}

/// Reads a config file: confined to `root` when discovered, bounded either way.
fn read(path: &Path, root: Option<&InputRoot>, start: &Path, diags: &mut Vec<Diagnostic>) -> Option<(PathBuf, ConfigFile)> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let name = relative_name(start, &crate::source::fs::normalize(&abs));
    match read_text_limited(root, path, &name, MAX_BYTES) {
        Ok(text) => Some((abs, ConfigFile { name, text: text.into() })),
        Err(ReadError::Missing) => {
            let d = Diagnostic::error(source_diags::MISSING, format!("--config `{}` does not exist", path.display()))
                .help("a path on the command line is relative to the current directory; --no-config reads no file");
            diags.push(d);
            None
        }
        Err(ReadError::Invalid(d) | ReadError::Io(d)) => {
            diags.push(d);
            None
        }
    }
}

/// What the file set: each value with its span.
#[derive(Default)]
struct FileValues {
    images: Option<(Vec<ImageSource>, Span)>,
    out: Option<(PathBuf, Span)>,
    env_file: Option<(PathBuf, Span)>,
    root: Option<(PathBuf, Span)>,
    descriptors: BTreeMap<String, (PathBuf, Span)>,
    runners: BTreeMap<String, (String, Span)>,
    no_cache: Option<(bool, Span)>,
    image_jobs: Option<(u16, Span)>,
    strict: Option<(bool, Span)>,
}

/// Parses the file's text; relative paths are taken from `dir`. With `confine` (a
/// discovered file: the bound and the repository), every path must resolve inside the
/// bound, and `root` inside the repository.
fn parse(file: &SourceFile, id: FileId, dir: &Path, confine: Option<(&InputRoot, &InputRoot)>, diags: &mut Vec<Diagnostic>) -> FileValues {
    let mut out = FileValues::default();
    let at = |span: Option<std::ops::Range<usize>>| Loc { file: id, span: span.map_or(Span::FILE, |r| file.span(r.start, r.end)) };
    let doc = match toml_edit::Document::parse(file.text.to_string()) {
        Ok(doc) => doc,
        Err(e) => {
            let msg = e.message().lines().next().unwrap_or("invalid TOML").trim().to_string();
            diags.push(
                Diagnostic::error(codes::SYNTAX, format!("{} is not valid TOML: {msg}", file.name))
                    .at(at(e.span()))
                    .help("the file holds `key = value` lines whose keys are clawc's long flags; see docs/config.md"),
            );
            return out;
        }
    };
    let table = doc.as_table();
    for (name, item) in table {
        let key_loc = at(table.key(name).and_then(toml_edit::Key::span));
        let Some(key) = KEYS.iter().find(|k| k.name == name) else {
            diags.push(unknown(name, key_loc, &file.name));
            continue;
        };
        let value_loc = at(item.span().or_else(|| table.key(name).and_then(toml_edit::Key::span)));
        let bad = |what: &str| {
            Diagnostic::error(codes::BAD_VALUE, format!("`{name}` in {} must be {what}", file.name))
                .at(value_loc)
                .label("this value")
                .help(format!("{}: {}", name, strip_ticks(key.value)))
        };
        let path = |s: &str, loc: Loc, diags: &mut Vec<Diagnostic>| -> Option<PathBuf> {
            if s.is_empty() || s.contains('\0') {
                diags.push(bad("a non-empty path").at(loc));
                return None;
            }
            let p = crate::source::fs::normalize(&std::path::absolute(dir.join(s)).unwrap_or_else(|_| dir.join(s)));
            // The root may only narrow the repository; other paths stay inside the bound.
            let inside = match confine {
                None => true,
                Some((_, repo)) if key.name == "root" => repo.holds(&p),
                Some((bound, _)) => bound.holds(&p),
            };
            if !inside {
                let limit = confine.map(|(b, r)| if key.name == "root" { r } else { b }).map(|r| r.path().display().to_string());
                diags.push(
                    Diagnostic::error(
                        source_diags::PATH_ESCAPE,
                        format!("`{name}` in {} resolves outside `{}`", file.name, limit.unwrap_or_default()),
                    )
                    .at(loc)
                    .label("this path")
                    .help("a clawc.toml found beside the pod is part of the repository, so its paths stay inside it; pass a flag (or --config FILE) to go further"),
                );
                return None;
            }
            Some(shorten(&p))
        };
        match key.kind {
            Kind::Bool => match item.as_value().and_then(Value::as_bool) {
                Some(b) if key.name == "strict" => out.strict = Some((b, value_loc.span)),
                Some(b) => out.no_cache = Some((b, value_loc.span)),
                None => diags.push(bad("`true` or `false`")),
            },
            Kind::Jobs => {
                match item.as_value().and_then(Value::as_integer).and_then(|n| u16::try_from(n).ok()).filter(|n| (1..=256).contains(n)) {
                    Some(n) => out.image_jobs = Some((n, value_loc.span)),
                    None => diags.push(bad("an integer from 1 to 256")),
                }
            }
            Kind::Path => match item.as_value().and_then(Value::as_str) {
                Some(s) => {
                    if let Some(p) = path(s, value_loc, diags) {
                        let slot = match key.name {
                            "out" => &mut out.out,
                            "env-file" => &mut out.env_file,
                            _ => &mut out.root,
                        };
                        *slot = Some((p, value_loc.span));
                    }
                }
                None => diags.push(bad("a string (a path)")),
            },
            Kind::Images | Kind::Descriptor | Kind::Runner => {
                let Some(list) = strings(item, &at) else {
                    diags.push(bad("a string or a list of strings"));
                    continue;
                };
                if list.is_empty() {
                    diags.push(bad("a string or a non-empty list of strings"));
                    continue;
                }
                match key.kind {
                    Kind::Images => {
                        let mut sources = Vec::new();
                        let mut ok = true;
                        for (s, loc) in list {
                            for part in s.split(',') {
                                match part.parse::<ImageSource>() {
                                    Ok(ImageSource::Oci(p)) => match path(&p.to_string_lossy(), loc, diags) {
                                        Some(p) => sources.push(ImageSource::Oci(p)),
                                        None => ok = false,
                                    },
                                    Ok(ImageSource::Archive(p)) => match path(&p.to_string_lossy(), loc, diags) {
                                        Some(p) => sources.push(ImageSource::Archive(p)),
                                        None => ok = false,
                                    },
                                    Ok(src) => sources.push(src),
                                    Err(why) => {
                                        ok = false;
                                        diags.push(bad(&format!("image sources; \"{part}\" is not one: {why}")).at(loc));
                                    }
                                }
                            }
                        }
                        if ok && sources.len() > 1 && sources.contains(&ImageSource::None) {
                            diags.push(bad("`none` alone, or sources without `none`"));
                        } else if ok {
                            out.images = Some((sources, value_loc.span));
                        }
                    }
                    _ => {
                        for (s, loc) in list {
                            let parsed = if key.kind == Kind::Descriptor {
                                parse_descriptor(&s).map(|(k, v)| (k, v.to_string_lossy().into_owned()))
                            } else {
                                parse_runner(&s)
                            };
                            let (svc, value) = match parsed {
                                Ok(pair) => pair,
                                Err(why) => {
                                    diags.push(bad(&format!("`{}` entries; {why}", strip_ticks(key.value))).at(loc));
                                    continue;
                                }
                            };
                            let twice = if key.kind == Kind::Descriptor {
                                out.descriptors.contains_key(&svc)
                            } else {
                                out.runners.contains_key(&svc)
                            };
                            if twice {
                                diags.push(
                                    Diagnostic::error(codes::BAD_VALUE, format!("`{name}` in {} names service \"{svc}\" twice", file.name))
                                        .at(loc)
                                        .help("keep one entry per service"),
                                );
                                continue;
                            }
                            if key.kind == Kind::Descriptor {
                                if let Some(p) = path(&value, loc, diags) {
                                    out.descriptors.insert(svc, (p, loc.span));
                                }
                            } else {
                                out.runners.insert(svc, (value, loc.span));
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The strings of a string or an array of strings, each with where it is.
fn strings(item: &Item, at: &dyn Fn(Option<std::ops::Range<usize>>) -> Loc) -> Option<Vec<(String, Loc)>> {
    match item.as_value()? {
        Value::String(s) => Some(vec![(s.value().clone(), at(s.span()))]),
        Value::Array(a) => a.iter().map(|v| v.as_str().map(|s| (s.to_string(), at(v.span())))).collect(),
        _ => None,
    }
}

fn unknown(name: &str, loc: Loc, file: &str) -> Diagnostic {
    if let Some((_, why)) = COMMAND_LINE_ONLY.iter().find(|(k, _)| *k == name) {
        return Diagnostic::error(codes::NOT_SETTABLE, format!("`{}` cannot be set in {file}", crate::diag::printable(name)))
            .at(loc)
            .label("a command-line flag only")
            .help(format!("{why}; remove the key"));
    }
    let names = KEYS.iter().map(|k| k.name);
    let fallback = format!("the keys are: {}", KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", "));
    // A snake_case spelling of a flag is the likeliest slip.
    let dashed = name.replace('_', "-");
    let help = match KEYS.iter().find(|k| k.name == dashed) {
        Some(k) => format!("did you mean `{}`?", k.name),
        None => suggest(name, names, fallback),
    };
    Diagnostic::error(codes::UNKNOWN_KEY, format!("unknown key `{}` in {file}", crate::diag::printable(name)))
        .at(loc)
        .label("no setting has this name")
        .help(help)
}

fn strip_ticks(s: &str) -> String {
    s.replace('`', "")
}

/// A path joined onto the current directory made relative to it again when it lies
/// inside (what a flag would take), so messages show `build/out`, not a host path.
pub(crate) fn shorten(p: &Path) -> PathBuf {
    match std::env::current_dir() {
        Ok(cwd) if p != cwd => p.strip_prefix(&cwd).map_or_else(|_| p.to_path_buf(), Path::to_path_buf),
        _ => p.to_path_buf(),
    }
}

fn merge(
    given: &Given,
    file: FileValues,
    config: Option<ConfigFile>,
    searched: Option<(PathBuf, PathBuf)>,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Vec<Diagnostic>,
) -> Effective {
    fn pick<T>(flag: Option<T>, file: Option<(T, Span)>, default: T) -> Setting<T> {
        match (flag, file) {
            (Some(v), _) => Setting::new(v, From::Flag),
            (None, Some((v, span))) => Setting::new(v, From::File(span)),
            (None, None) => Setting::new(default, From::Default),
        }
    }
    let images = if !given.images.is_empty() {
        check_none(&given.images, "--images", diags);
        Setting::new(given.images.clone(), From::Flag)
    } else if let Some(value) = env(IMAGES_VAR).filter(|v| !v.is_empty()) {
        let parsed: Result<Vec<ImageSource>, String> = value.split(',').map(str::parse).collect();
        match parsed {
            Ok(list) => {
                check_none(&list, IMAGES_VAR, diags);
                Setting::new(list, From::Env(IMAGES_VAR))
            }
            Err(why) => {
                diags.push(
                    Diagnostic::error(codes::BAD_VALUE, format!("{IMAGES_VAR}={}: {why}", crate::diag::printable(&value)))
                        .help(format!("set {IMAGES_VAR} to image sources separated by commas, or unset it")),
                );
                Setting::new(vec![ImageSource::Auto], From::Default)
            }
        }
    } else {
        pick(None, file.images, vec![ImageSource::Auto])
    };
    let descriptors = per_service(file.descriptors, &given.descriptors, "--descriptor", diags);
    let runners = per_service(file.runners, &given.runners, "--runner", diags);
    let some = |o: Option<(PathBuf, Span)>| o.map(|(p, s)| (Some(p), s));
    Effective {
        file: config,
        searched,
        images,
        out: pick(given.out.clone().map(Some), some(file.out), None),
        env_file: pick(given.env_file.clone().map(Some), some(file.env_file), None),
        descriptors,
        runners,
        root: pick(given.root.clone().map(Some), some(file.root), None),
        no_cache: pick(given.no_cache, file.no_cache, false),
        image_jobs: pick(given.image_jobs, file.image_jobs, 8),
        jobs: given.jobs.map_or(0, usize::from),
        strict: pick(given.strict, file.strict, false),
        repository: PathBuf::new(),
    }
}

fn check_none(list: &[ImageSource], by: &str, diags: &mut Vec<Diagnostic>) {
    if list.len() > 1 && list.contains(&ImageSource::None) {
        diags.push(
            Diagnostic::error(codes::BAD_VALUE, format!("{by}: `none` cannot be combined with other image sources"))
                .help("give `none` alone, or the sources to read"),
        );
    }
}

/// A repeatable `SERVICE=VALUE` setting: the file's entries, each replaced by the flag's
/// for the same service; a flag given twice for one service is an error.
fn per_service<T: Clone>(
    file: BTreeMap<String, (T, Span)>,
    given: &[(String, T)],
    flag: &str,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Setting<T>> {
    let mut out: BTreeMap<String, Setting<T>> = file.into_iter().map(|(k, (v, span))| (k, Setting::new(v, From::File(span)))).collect();
    let mut seen = std::collections::BTreeSet::new();
    for (svc, value) in given {
        if !seen.insert(svc) {
            diags.push(twice(flag, svc));
        }
        out.insert(svc.clone(), Setting::new(value.clone(), From::Flag));
    }
    out
}

fn twice(flag: &str, svc: &str) -> Diagnostic {
    Diagnostic::error(codes::BAD_VALUE, format!("{flag} is given twice for service \"{svc}\"")).help("give one per service")
}

/// `SERVICE=PATH` (a `--descriptor` value or an entry of `descriptor`).
pub(crate) fn parse_descriptor(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((svc, path)) if !svc.trim().is_empty() && !path.is_empty() => Ok((svc.trim().to_string(), PathBuf::from(path))),
        _ => Err("expected SERVICE=PATH, e.g. --descriptor trading-api=descriptors/trading-api.json".to_string()),
    }
}

/// `SERVICE=TYPE` (a `--runner` value or an entry of `runner`), the runner named canonically.
pub(crate) fn parse_runner(s: &str) -> Result<(String, String), String> {
    let names = || crate::runner::Runner::names().collect::<Vec<_>>().join(", ");
    match s.split_once('=') {
        Some((svc, ty)) if !svc.trim().is_empty() => match crate::runner::Runner::parse(ty) {
            Some(r) => Ok((svc.trim().to_string(), r.name().to_string())),
            None => Err(format!(
                "\"{ty}\" is not a runner clawc knows; {} (one of: {})",
                suggest(ty, crate::runner::Runner::names(), "name one it knows"),
                names()
            )),
        },
        _ => Err(format!("expected SERVICE=TYPE, e.g. --runner coder=codex (TYPE one of: {})", names())),
    }
}

/// Every key as `clawc config --keys` lists it.
pub(crate) fn keys_text() -> String {
    let mut out = String::new();
    for k in KEYS {
        let env = k.env.map(|v| format!(" (environment: {v})")).unwrap_or_default();
        out.push_str(&format!("{} = {}\n", k.name, strip_ticks(k.value)));
        out.push_str(&format!("    {}; default {}{env}; read by {}\n", strip_ticks(k.meaning), strip_ticks(k.default), k.used_by));
    }
    out.push_str(&format!("\ncommand line only: {}\n", COMMAND_LINE_ONLY.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")));
    out
}

/// The keys table of `docs/config.md` (between its `keys:begin/end` markers).
#[cfg(test)]
fn keys_markdown() -> String {
    let mut out = String::from("| key | value | default | environment | read by | meaning |\n|---|---|---|---|---|---|\n");
    for k in KEYS {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            k.name,
            k.value,
            k.default,
            k.env.map_or_else(|| "—".to_string(), |v| format!("`{v}`")),
            k.used_by,
            k.meaning
        ));
    }
    out.push_str("\nOnly the command line sets ");
    out.push_str(&COMMAND_LINE_ONLY.iter().map(|(k, _)| format!("`{k}`")).collect::<Vec<_>>().join(", "));
    out.push_str(" (`clawc::config::not_settable`):\n\n");
    for (k, why) in COMMAND_LINE_ONLY {
        out.push_str(&format!("- `{k}`: {why}.\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> (FileValues, Vec<Diagnostic>) {
        let file = SourceFile::new("clawc.toml", text);
        let mut diags = Vec::new();
        let v = parse(&file, FileId(0), Path::new("/repo"), None, &mut diags);
        (v, diags)
    }

    fn codes_of(d: &[Diagnostic]) -> Vec<crate::diag::Code> {
        d.iter().map(|d| d.code).collect()
    }

    use crate::source::diags::PATH_ESCAPE;
    use codes::{BAD_VALUE, NOT_SETTABLE, SYNTAX, UNKNOWN_KEY};

    #[test]
    fn every_key_parses_its_value() {
        let (v, d) = parse_text(
            "images = [\"oci:build/images\", \"docker\"]\nout = \"o\"\nenv-file = \"e.env\"\nroot = \".\"\n\
             descriptor = \"api=d/api.json\"\nrunner = [\"coder=claude\"]\nno-cache = true\nimage-jobs = 3\nstrict = true\n",
        );
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(v.images.unwrap().0, vec![ImageSource::Oci("/repo/build/images".into()), ImageSource::Docker]);
        assert_eq!(v.out.unwrap().0, PathBuf::from("/repo/o"));
        assert_eq!(v.descriptors["api"].0, PathBuf::from("/repo/d/api.json"));
        assert_eq!(v.runners["coder"].0, "claude-code");
        assert_eq!((v.no_cache.unwrap().0, v.image_jobs.unwrap().0, v.strict.unwrap().0), (true, 3, true));
    }

    #[test]
    fn a_string_of_images_is_split_at_commas() {
        let (v, d) = parse_text("images = \"docker,archive:i.tar\"\n");
        assert!(d.is_empty());
        assert_eq!(v.images.unwrap().0, vec![ImageSource::Docker, ImageSource::Archive("/repo/i.tar".into())]);
    }

    #[test]
    fn bad_values_and_keys_are_coded_and_placed() {
        let (_, d) = parse_text("image-jobs = \"eight\"\nimgaes = \"none\"\nsecrets = \"inline\"\nstrict = 1\n");
        assert_eq!(codes_of(&d), [BAD_VALUE, UNKNOWN_KEY, NOT_SETTABLE, BAD_VALUE]);
        assert_eq!(d[1].loc.unwrap().span.line, 2);
        assert_eq!(d[1].help.as_deref(), Some("did you mean `images`?"));
        let (_, d) = parse_text("env_file = \".env\"\n");
        assert_eq!(d[0].help.as_deref(), Some("did you mean `env-file`?"));
        let (_, d) = parse_text("images = [\"none\", \"docker\"]\ndescriptor = [\"a=x\", \"a=y\"]\nrunner = \"a=nosuch\"\nimages2 = [\n");
        assert_eq!(codes_of(&d), [SYNTAX], "a syntax error is reported alone");
        let (_, d) = parse_text("images = [\"none\", \"docker\"]\ndescriptor = [\"a=x\", \"a=y\"]\nrunner = \"a=nosuch\"\nout = 3\n");
        assert_eq!(codes_of(&d), [BAD_VALUE; 4]);
    }

    #[test]
    fn hostile_text_is_refused_not_panicked_on() {
        for text in [
            "a = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1",
            "[images]\nx=1",
            "\u{1b}[31m = 1",
            "images = \"\"",
            "out = \"a\\u0000b\"",
        ] {
            let (_, d) = parse_text(text);
            assert!(!d.is_empty(), "{text:?} was accepted");
            assert!(d.iter().all(|d| !d.message.contains('\u{1b}')), "{d:?}");
        }
    }

    #[test]
    fn paths_of_a_discovered_file_stay_in_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = InputRoot::new(dir.path()).unwrap();
        let file =
            SourceFile::new("clawc.toml", "out = \"../elsewhere\"\nenv-file = \"/etc/passwd\"\nimages = \"oci:../x\"\nroot = \"..\"\n");
        let mut diags = Vec::new();
        let v = parse(&file, FileId(0), repo.path(), Some((&repo, &repo)), &mut diags);
        assert_eq!(codes_of(&diags), [PATH_ESCAPE; 4]);
        assert!(v.out.is_none() && v.env_file.is_none() && v.images.is_none() && v.root.is_none());
        std::os::unix::fs::symlink("/etc", dir.path().join("link")).unwrap();
        let file = SourceFile::new("clawc.toml", "env-file = \"link/passwd\"\n");
        let mut diags = Vec::new();
        parse(&file, FileId(0), repo.path(), Some((&repo, &repo)), &mut diags);
        assert_eq!(codes_of(&diags), [PATH_ESCAPE], "a symlink out of the repository");
    }

    /// `docs/config.md` carries the table [`KEYS`] renders
    /// (`UPDATE_GOLDEN=1 cargo test --lib config` rewrites it).
    #[test]
    fn the_keys_table_in_the_docs_is_current() {
        crate::generated_doc::assert_current("docs/config.md", Some("keys"), &keys_markdown(), "UPDATE_GOLDEN=1 cargo test --lib config");
    }

    #[test]
    fn every_key_is_a_long_flag_of_compile() {
        let cli = crate::cli::command();
        let compile = cli.find_subcommand("compile").unwrap();
        let longs: Vec<&str> = compile.get_arguments().filter_map(clap::Arg::get_long).collect();
        for k in KEYS {
            assert!(longs.contains(&k.name), "{} is not a flag of compile", k.name);
        }
        for (k, _) in COMMAND_LINE_ONLY {
            assert!(longs.contains(k), "{k} is not a flag of compile");
        }
        for l in longs.iter().filter(|l| **l != "help") {
            assert!(
                KEYS.iter().any(|k| k.name == *l) || COMMAND_LINE_ONLY.iter().any(|(k, _)| k == l),
                "--{l}: neither a key nor command-line only"
            );
        }
    }
}
