//! Where a service's descriptor bytes come from. Each place is a [`DescriptorSource`];
//! [`Sources::standard`] chains them in Clawdapus' order (the first that has one wins):
//! `--descriptor`, `x-claw.describe-file`, a `.claw-discovered/` snapshot, the image the
//! service names ([`image::Image`]), the build context.
//!
//! This is the I/O edge of the describe pass: sources return text and its origin, and
//! [`crate::describe::decode`] turns the text into a descriptor without touching disk.

pub mod diags;
pub mod dockerfile;
pub mod fs;
pub mod image;
pub mod record;

use crate::diag::Diagnostic;
use crate::pod::{Role, Service};
use fs::ReadError;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a descriptor was found: recorded in the report (and later the lock).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OriginKind {
    CommandLine,
    DescribeFile,
    Discovered,
    Image,
    BuildContext,
}

impl OriginKind {
    /// The kebab-case name used in the report and the lock.
    pub fn as_str(&self) -> &'static str {
        match self {
            OriginKind::CommandLine => "command-line",
            OriginKind::DescribeFile => "describe-file",
            OriginKind::Discovered => "discovered",
            OriginKind::Image => "image",
            OriginKind::BuildContext => "build-context",
        }
    }
}

/// A descriptor's text and where it came from.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub kind: OriginKind,
    /// Pod-relative, `/`-separated path of the file.
    pub name: String,
    pub text: String,
    /// Where a descriptor `skill` path is resolved (and confined to).
    pub skill_root: SkillRoot,
    /// Warnings about this source (a stale discovery snapshot).
    pub warnings: Vec<Diagnostic>,
    /// A baked `tools/list` snapshot beside the descriptor in the same image, already
    /// converted: (name, descriptor JSON text). Its tools join the descriptor's.
    pub snapshot: Option<(String, String)>,
}

/// Where a descriptor's `skill` file lives.
#[derive(Clone, Debug)]
pub enum SkillRoot {
    /// A directory on disk (the build context, or beside the descriptor file).
    Dir(PathBuf),
    /// The image the descriptor came from.
    Image(std::sync::Arc<crate::image::ImageFacts>),
}

/// One service to describe.
pub struct Request<'a> {
    pub pod_dir: &'a Path,
    pub service: &'a Service,
    /// Every read goes through here, so the lock knows all inputs.
    pub log: &'a record::InputLog,
}

pub type SourceResult = Result<Option<Loaded>, Vec<Diagnostic>>;

pub trait DescriptorSource {
    /// The descriptor of `req.service`, `None` when this source has none for it.
    fn describe(&self, req: &Request) -> SourceResult;
}

/// The ordered chain of sources.
pub struct Sources(Vec<Box<dyn DescriptorSource>>);

impl Sources {
    /// Clawdapus' order, with `--descriptor SERVICE=PATH` overrides first.
    pub fn standard(overrides: BTreeMap<String, PathBuf>, images: std::sync::Arc<crate::image::ImageSet>) -> Self {
        Sources(vec![
            Box::new(CommandLine(overrides)),
            Box::new(DescribeFile),
            Box::new(Discovered),
            Box::new(image::Image(images)),
            Box::new(BuildContext),
        ])
    }

    pub fn describe(&self, req: &Request) -> SourceResult {
        for source in &self.0 {
            if let Some(found) = source.describe(req)? {
                return Ok(Some(found));
            }
        }
        if req.service.claw.as_ref().is_some_and(|c| c.role == Role::McpStdio) {
            let s = &req.service.name;
            let d = Diagnostic::error(
                diags::NO_SIDECAR_DESCRIPTOR,
                format!(
                    "service \"{s}\": stdio MCP sidecar has no descriptor snapshot; run 'claw discover {s}' or set x-claw.describe-file"
                ),
            )
            .at(req.service.loc)
            .help(format!(
                "run `claw discover {s}` to write .claw-discovered/{s}.claw-describe.json, or point x-claw.describe-file at a descriptor"
            ));
            return Err(vec![d]);
        }
        Ok(None)
    }
}

/// Reads a descriptor file that must exist.
fn read_required(req: &Request, path: &Path, kind: OriginKind, what: &str, loc: Option<crate::sourcemap::Loc>) -> SourceResult {
    let pod_dir = req.pod_dir;
    let name = fs::relative_name(pod_dir, path);
    let read = if kind == OriginKind::CommandLine {
        req.log.read_trusted(path, &name, "descriptor")
    } else {
        req.log.read(path, &name, "descriptor")
    };
    match read {
        Ok(text) => Ok(Some(Loaded {
            kind,
            name,
            text,
            skill_root: SkillRoot::Dir(path.parent().unwrap_or(pod_dir).to_path_buf()),
            warnings: Vec::new(),
            snapshot: None,
        })),
        Err(ReadError::Missing) => {
            let d = Diagnostic::error(diags::MISSING, format!("{what} `{name}` does not exist"))
                .at_opt(loc)
                .help("check the path; it is relative to the pod file's directory");
            Err(vec![d])
        }
        Err(ReadError::Invalid(d) | ReadError::Io(d)) => Err(vec![d.at_opt(loc)]),
    }
}

/// Skills of build services resolve in the build context, others beside the descriptor.
fn with_build_root(mut loaded: Loaded, req: &Request) -> Loaded {
    if let Some(b) = &req.service.build {
        loaded.skill_root = SkillRoot::Dir(fs::normalize(&req.pod_dir.join(&b.context)));
    }
    loaded
}

struct CommandLine(BTreeMap<String, PathBuf>);

impl DescriptorSource for CommandLine {
    fn describe(&self, req: &Request) -> SourceResult {
        let Some(path) = self.0.get(&req.service.name) else { return Ok(None) };
        Ok(read_required(req, path, OriginKind::CommandLine, "--descriptor file", None)?.map(|l| with_build_root(l, req)))
    }
}

struct DescribeFile;

impl DescriptorSource for DescribeFile {
    fn describe(&self, req: &Request) -> SourceResult {
        let Some(file) = req.service.claw.as_ref().and_then(|c| c.describe_file.as_ref()) else { return Ok(None) };
        let path = fs::normalize(&req.pod_dir.join(&file.value));
        Ok(read_required(req, &path, OriginKind::DescribeFile, "describe-file", Some(file.loc))?.map(|l| with_build_root(l, req)))
    }
}

struct Discovered;

/// `.claw-discovered/<name>` sanitising: `/ \ :` → `-`; empty, `.` or `..` → `service`.
fn sanitize(name: &str) -> String {
    let s: String = name.chars().map(|c| if matches!(c, '/' | '\\' | ':') { '-' } else { c }).collect();
    if matches!(s.as_str(), "" | "." | "..") { "service".to_string() } else { s }
}

impl DescriptorSource for Discovered {
    fn describe(&self, req: &Request) -> SourceResult {
        let svc = req.service;
        let sidecar = svc.claw.as_ref().and_then(|c| c.stdio.as_ref().filter(|_| c.role == Role::McpStdio));
        if sidecar.is_none() && svc.build.is_none() {
            return Ok(None);
        }
        let path = req.pod_dir.join(".claw-discovered").join(format!("{}.claw-describe.json", sanitize(&svc.name)));
        let name = fs::relative_name(req.pod_dir, &path);
        let text = match req.log.read(&path, &name, "snapshot") {
            Ok(t) => t,
            Err(ReadError::Missing) => return Ok(None),
            Err(ReadError::Invalid(d) | ReadError::Io(d)) => return Err(vec![d]),
        };
        let discovery = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v.get("x-claw-discovery").cloned());
        let field =
            |k: &str| discovery.as_ref().and_then(|d| d.get(k)).and_then(|v| v.as_str()).map(str::trim).unwrap_or_default().to_string();
        let mut warnings = Vec::new();
        if let Some(cmd) = sidecar {
            let args: Vec<String> = discovery
                .as_ref()
                .and_then(|d| d.get("args"))
                .and_then(|a| a.as_array())
                .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            if discovery.is_some() && (field("command") != cmd.command || args != cmd.args) {
                let s = &svc.name;
                warnings.push(
                    Diagnostic::warning(
                        diags::STALE_SNAPSHOT,
                        format!("service \"{s}\" discovered descriptor is stale; run 'claw discover {s}' to refresh .claw-discovered"),
                    )
                    .at(svc.loc)
                    .help("the snapshot records another mcp-stdio command or args than the pod declares"),
                );
            }
        } else {
            // A build service uses only a runtime-descriptor snapshot of its own image.
            let image = svc.image.as_ref().map(|i| i.value.as_str()).unwrap_or_default();
            if field("command") != "runtime-descriptor" || field("wrapper_image") != image {
                return Ok(None);
            }
        }
        let skill_root = SkillRoot::Dir(req.pod_dir.join(".claw-discovered"));
        Ok(Some(with_build_root(Loaded { kind: OriginKind::Discovered, name, text, skill_root, warnings, snapshot: None }, req)))
    }
}

struct BuildContext;

impl DescriptorSource for BuildContext {
    fn describe(&self, req: &Request) -> SourceResult {
        let Some(build) = &req.service.build else { return Ok(None) };
        let context = fs::normalize(&req.pod_dir.join(&build.context));
        let label = build_labels(req)?.and_then(|(mut labels, name)| labels.remove("claw.describe").map(|l| (l, name)));
        let path = match &label {
            Some((l, dockerfile)) => fs::contained(&context, l).map_err(|why| {
                vec![
                    Diagnostic::error(
                        diags::PATH_ESCAPE,
                        format!("service \"{}\": LABEL claw.describe in `{dockerfile}`: {why}", req.service.name),
                    )
                    .at(build.loc)
                    .help("a label path names a file inside the build context, e.g. /service.claw-describe.json"),
                ]
            })?,
            // The implicit file is confined to the context as a label path is.
            None => fs::contained(&context, ".claw-describe.json").map_err(|why| {
                vec![
                    Diagnostic::error(diags::PATH_ESCAPE, format!("service \"{}\": .claw-describe.json: {why}", req.service.name))
                        .at(build.loc)
                        .help("the build context's descriptor must be a file inside the context"),
                ]
            })?,
        };
        let name = fs::relative_name(req.pod_dir, &path);
        match req.log.read(&path, &name, "descriptor") {
            Ok(text) => Ok(Some(Loaded {
                kind: OriginKind::BuildContext,
                name,
                text,
                skill_root: SkillRoot::Dir(context),
                warnings: Vec::new(),
                snapshot: None,
            })),
            Err(ReadError::Missing) => Ok(None),
            Err(ReadError::Invalid(d) | ReadError::Io(d)) => Err(vec![d.at(build.loc)]),
        }
    }
}

/// Reads a descriptor's `skill` file, confined to the loaded descriptor's skill root.
pub fn read_skill(loaded: &Loaded, skill: &str, pod_dir: &Path, log: &record::InputLog) -> Result<(String, String), Diagnostic> {
    let root = match &loaded.skill_root {
        SkillRoot::Dir(d) => d,
        SkillRoot::Image(facts) => return image_file(facts, skill, Some("the descriptor's skill"), log),
    };
    let path = fs::contained(root, skill).map_err(|why| {
        Diagnostic::error(diags::PATH_ESCAPE, format!("descriptor skill {why}"))
            .help("a descriptor's skill names a file inside the service's build context")
    })?;
    let name = fs::relative_name(pod_dir, &path);
    match log.read(&path, &name, "skill") {
        Ok(text) => Ok((name, text)),
        Err(ReadError::Missing) => {
            Err(Diagnostic::error(diags::SKILL_NOT_FOUND, format!("descriptor skill \"{skill}\" was not found in the build context"))
                .help(format!("expected `{name}`; add the file or remove \"skill\" from the descriptor")))
        }
        Err(ReadError::Invalid(d) | ReadError::Io(d)) => Err(d),
    }
}

/// A file the image's labels or descriptor name (read by the image fetch), recorded in
/// the input log as `<image>:<path>`.
pub fn image_file(
    facts: &crate::image::ImageFacts,
    raw: &str,
    named_by: Option<&str>,
    log: &record::InputLog,
) -> Result<(String, String), Diagnostic> {
    let text = image::required(facts, raw, named_by)?;
    let name = facts.file_name(&crate::image::image_path(raw).unwrap_or_else(|| raw.to_string()));
    log.record(&name, "image", Some(text.as_bytes()));
    Ok((name, text))
}

/// A Dockerfile's labels and its pod-relative name.
pub type DockerfileLabels = (BTreeMap<String, String>, String);

/// The `LABEL`s of a build service's Dockerfile (`build.dockerfile`, else `Clawfile`,
/// else `Dockerfile`) with the file's pod-relative name; `None` without one.
pub fn build_labels(req: &Request) -> Result<Option<DockerfileLabels>, Vec<Diagnostic>> {
    let Some(build) = &req.service.build else { return Ok(None) };
    let context = fs::normalize(&req.pod_dir.join(&build.context));
    let dockerfiles: Vec<PathBuf> = match &build.dockerfile {
        Some(d) => vec![context.join(d)],
        None => vec![context.join("Clawfile"), context.join("Dockerfile")],
    };
    for df in dockerfiles {
        let name = fs::relative_name(req.pod_dir, &df);
        match req.log.read(&df, &name, "dockerfile") {
            Ok(text) => return Ok(Some((dockerfile::labels(&text), name))),
            Err(ReadError::Missing) => continue,
            Err(ReadError::Invalid(d) | ReadError::Io(d)) => return Err(vec![d.at(build.loc)]),
        }
    }
    Ok(None)
}
