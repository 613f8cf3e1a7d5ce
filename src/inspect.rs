//! The driver of `clawc describe`: reads one service's sources at the I/O edge (a
//! descriptor or snapshot file, a build context, an image, or a service of a pod) and
//! runs the describe stage on them, exactly as `compile` would.

use crate::compile::{Options, pod_dir};
use crate::describe::{self, Described};
use crate::diag::{Diagnostic, Diagnostics};
use crate::image::{ImageFacts, ImageSet, diags as image_diags};
use crate::pod::{Build, Pod, Spanned};
use crate::source::fs::{InputRoot, ReadError};
use crate::source::record::InputLog;
use crate::source::{Declared, Loaded, OriginKind, Request, SkillRoot, Skills, Snapshot, Text, diags as source_diags};
use crate::sourcemap::{Loc, SourceMap};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to describe.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// A descriptor file, a `.claw-tools.json` snapshot, or a build context directory.
    Path(PathBuf),
    /// An image, read through `Options::images`.
    Image(String),
    /// A service of the pod `Options::pod`.
    Service(String),
}

/// The described service (when nothing was in error) and every diagnostic.
pub(crate) struct Inspected {
    pub described: Option<Described>,
    pub diagnostics: Diagnostics,
    pub sources: SourceMap,
    /// What was read from the image, when the target is one (its labels and files as
    /// read: `clawc compat` takes a release version and a snapshot as written from it).
    pub image: Option<Arc<ImageFacts>>,
}

impl Inspected {
    /// 0, 2 (invalid input) or 3 (environment failure), as `compile` exits.
    pub(crate) fn exit_code(&self) -> i32 {
        crate::compile::exit_code(&self.diagnostics)
    }
}

/// Describes `target`. `name` overrides the service name of a path or image target
/// (default: the file's, directory's or image repository's last name).
pub(crate) fn inspect(target: &Target, name: Option<&str>, opts: &Options) -> Inspected {
    let mut sources = SourceMap::default();
    let mut diags = Diagnostics::default();
    let (described, image) = match target {
        Target::Path(p) => (path(p, name, &mut sources, &mut diags), None),
        Target::Image(r) => image(r, name, opts, &mut sources, &mut diags),
        Target::Service(s) => (service(s, opts, &mut sources, &mut diags), None),
    };
    let described = described.filter(|_| !diags.has_errors());
    Inspected { described, diagnostics: diags.sorted(&sources), sources, image }
}

/// The command line as a source file, so problems with what it names have a location.
fn command_line(sources: &mut SourceMap, text: String) -> Loc {
    let len = text.len();
    let file = sources.add("<command line>", text);
    Loc { file, span: sources.get(file).span(0, len) }
}

/// The service name [`inspect`] gives `target` when it is not given one.
pub(crate) fn default_name(target: &Target) -> String {
    match target {
        Target::Path(p) => {
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            last_name(&crate::source::fs::normalize(&abs).to_string_lossy())
        }
        Target::Image(r) => last_name(r),
        Target::Service(s) => s.clone(),
    }
}

fn last_name(p: &str) -> String {
    let mut base = describe::service::basename(p);
    // `svc/.claw-describe.json` describes `svc`.
    if matches!(base, ".claw-describe.json" | ".claw-tools.json" | "claw-tools.json") {
        base = describe::service::basename(p.trim_end_matches('/').rsplit_once('/').map_or("", |(dir, _)| dir));
    }
    let base = base.split(['@', ':']).next().unwrap_or(base);
    let base = base.trim_end_matches(".claw-tools.json").trim_end_matches(".claw-describe.json").trim_end_matches(".json");
    if base.is_empty() || base == "." { "service".to_string() } else { base.to_string() }
}

fn path(p: &Path, name: Option<&str>, sources: &mut SourceMap, diags: &mut Diagnostics) -> Option<Described> {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let shown = p.display().to_string();
    let loc = command_line(sources, shown.clone());
    let name = name.map_or_else(|| default_name(&Target::Path(p.to_path_buf())), str::to_string);
    if abs.is_dir() {
        return build_context(&abs, name, loc, sources, diags);
    }
    let dir = abs.parent().unwrap_or(Path::new("/")).to_path_buf();
    let log = InputLog::new(InputRoot::new(&dir).unwrap_or_else(|_| InputRoot::discover(&dir)));
    let text = match log.read_trusted(&abs, &shown, "descriptor") {
        Ok(t) => t,
        Err(ReadError::Missing) => {
            diags.push(
                Diagnostic::error(source_diags::MISSING, format!("`{shown}` does not exist"))
                    .at(loc)
                    .help("name a descriptor file, a .claw-tools.json snapshot, or a build context directory"),
            );
            return None;
        }
        Err(ReadError::Invalid(d) | ReadError::Io(d)) => {
            diags.push(d.at(loc));
            return None;
        }
    };
    let file = Text { name: shown.clone(), text };
    let is_snapshot = shown.ends_with("claw-tools.json");
    let (descriptor, snapshot) =
        if is_snapshot { (None, Some(Snapshot { file, mcp_path: "/mcp".into(), loc: None })) } else { (Some(file), None) };
    let loaded =
        Loaded { kind: OriginKind::CommandLine, descriptor, snapshot, skill_root: SkillRoot::Dir(dir.clone()), warnings: Vec::new() };
    let declared = declared(name, loc);
    let skills = Skills { pod_dir: &std::env::current_dir().unwrap_or(dir), log: &log };
    let input = describe::service::Input { loaded: Ok(Some(loaded)), runner: None };
    Some(describe::service::describe(&declared, input, &skills, sources, diags))
}

fn declared(name: String, loc: Loc) -> Declared {
    Declared { name, loc, image: None, build: None, describe_file: None, stdio: None, sidecar: false, agent: false, builtin: false }
}

/// A build context: its descriptor (`LABEL claw.describe` or `.claw-describe.json`) and
/// its runner (`CLAW_TYPE` or `LABEL claw.type`), confined to the context.
fn build_context(dir: &Path, name: String, loc: Loc, sources: &mut SourceMap, diags: &mut Diagnostics) -> Option<Described> {
    let log = InputLog::new(InputRoot::new(dir).unwrap_or_else(|_| InputRoot::discover(dir)));
    let declared = Declared { build: Some(Build { context: ".".into(), dockerfile: None, loc }), agent: true, ..declared(name, loc) };
    let req = Request::new(dir, &declared, &log);
    let loaded = crate::source::build_context::build_context(&req);
    let runner = crate::source::runner(&req, &ImageSet::default());
    let skills = Skills { pod_dir: dir, log: &log };
    Some(describe::service::describe(&declared, describe::service::Input { loaded, runner }, &skills, sources, diags))
}

fn image(
    reference: &str,
    name: Option<&str>,
    opts: &Options,
    sources: &mut SourceMap,
    diags: &mut Diagnostics,
) -> (Option<Described>, Option<Arc<ImageFacts>>) {
    let loc = command_line(sources, reference.to_string());
    if opts.images.is_empty() {
        diags.push(
            Diagnostic::error(image_diags::BAD_SOURCE, "--images none: there is no image source to read the image from")
                .help("pass --images docker, oci:DIR or archive:TAR"),
        );
        return (None, None);
    }
    let set = match crate::compile::fetch_images(opts, BTreeMap::from([(reference.to_string(), true)])) {
        Ok(set) => Arc::new(set),
        Err(ds) => {
            diags.extend(ds);
            return (None, None);
        }
    };
    if let Some(tried) = set.tried_for(reference) {
        diags.push(
            Diagnostic::error(image_diags::NOT_FOUND, format!("image {reference} was not found (tried: {tried})"))
                .at(loc)
                .help("pull or build it, or point clawc at a copy: --images oci:DIR or --images archive:TAR"),
        );
        return (None, None);
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let log = InputLog::new(InputRoot::discover(&cwd));
    let image = Some(Spanned { value: reference.to_string(), loc });
    let declared = Declared {
        image,
        agent: true,
        ..declared(name.map_or_else(|| default_name(&Target::Image(reference.to_string())), str::to_string), loc)
    };
    let req = Request::new(&cwd, &declared, &log);
    let loaded = crate::source::image::Image(set.clone()).describe_image(&req);
    let runner = crate::source::runner(&req, &set);
    let skills = Skills { pod_dir: &cwd, log: &log };
    let described = describe::service::describe(&declared, describe::service::Input { loaded, runner }, &skills, sources, diags);
    (Some(described), set.found.get(reference).cloned())
}

/// A service of a pod: parsed and expanded as `compile` does, its image read, then only
/// that service described.
fn service(name: &str, opts: &Options, sources: &mut SourceMap, diags: &mut Diagnostics) -> Option<Described> {
    let (mut pod, _env, log) = crate::compile::read_pod(opts, sources, diags)?;
    // One of the pod's services, or one `claw up` injects into it (built in).
    let service = pod.services.remove(name);
    let builtin = pod.builtins.remove(name);
    if service.is_none() && builtin.is_none() {
        let names = pod.services.keys().chain(pod.builtins.keys()).map(String::as_str);
        let help = crate::diag::suggest(name, names, "name a service of this pod");
        diags.push(Diagnostic::error(source_diags::UNKNOWN_SERVICE, format!("\"{name}\" is not a service of this pod")).help(help));
        return None;
    }
    let services = service.map(|s| BTreeMap::from([(name.to_string(), s)])).unwrap_or_default();
    let builtins = builtin.map(|b| BTreeMap::from([(name.to_string(), b)])).unwrap_or_default();
    let one = Pod { services, builtins, ..pod };
    let images = match crate::compile::read_images(opts, &one) {
        Ok(set) => Arc::new(set),
        Err(ds) => {
            diags.extend(ds);
            return None;
        }
    };
    let described = crate::compile::describe_all(&one, &pod_dir(&opts.pod), opts, &images, &log, sources, diags);
    let named = described.iter().filter(|(_, d)| d.descriptor.is_some()).map(|(s, _)| s.clone()).collect();
    diags.extend(crate::image::usage::missing(&one, &images, &named));
    let mut described = described;
    described.remove(name)
}
