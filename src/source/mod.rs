//! Where a service's descriptor bytes come from. Each place is a [`DescriptorSource`] in
//! a file of its own; [`Sources::standard`], the one table of them, chains them in
//! Clawdapus' order (the first that has one wins):
//! `--descriptor`, `x-claw.describe-file`, a `.claw-discovered/` snapshot, the image the
//! service names ([`image::Image`]), the build context.
//!
//! This is the I/O edge of the describe stage: sources return text and its origin (and
//! [`runner`] the runner a service declares), and [`crate::describe`] turns them into a
//! `Described` service without touching disk. A [`Request`] is a service's declared
//! sources ([`Declared`]), not a pod: `clawc describe PATH` builds one from a path.

pub(crate) mod build_context;
pub(crate) mod builtin;
pub(crate) mod command_line;
pub(crate) mod describe_file;
pub(crate) mod diags;
pub(crate) mod discovered;
pub(crate) mod dockerfile;
pub(crate) mod fs;
pub(crate) mod image;
pub(crate) mod kept;
pub(crate) mod record;

use crate::diag::Diagnostic;
use crate::pod::{Build, Role, Service, Spanned, StdioCommand};
use crate::sourcemap::Loc;
use fs::ReadError;
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) use crate::origin::OriginKind;

/// A file's name (pod-relative and `/`-separated, or `<image>:<path>`) and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Text {
    pub name: String,
    pub text: String,
}

/// A baked MCP `tools/list` snapshot (`.claw-tools.json`), as read.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub file: Text,
    /// The service's MCP endpoint path its tools are called through.
    pub mcp_path: String,
    /// Where a problem with the snapshot is reported.
    pub loc: Option<Loc>,
}

/// What one source found for a service: a descriptor, a snapshot, or both (an image
/// that bakes both; the snapshot's tools then join the descriptor's).
#[derive(Clone, Debug)]
pub(crate) struct Loaded {
    pub kind: OriginKind,
    pub descriptor: Option<Text>,
    pub snapshot: Option<Snapshot>,
    /// Where a descriptor `skill` path is resolved (and confined to).
    pub skill_root: SkillRoot,
    /// Warnings about this source (a stale discovery snapshot).
    pub warnings: Vec<Diagnostic>,
}

/// An image a description was read from: the reference the pod writes and its content
/// address (Docker image ID / OCI config digest).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct ImageRef {
    pub reference: String,
    pub id: String,
}

impl Loaded {
    /// A descriptor file found on disk.
    fn file(kind: OriginKind, name: String, text: String, skill_root: SkillRoot) -> Self {
        Loaded { kind, descriptor: Some(Text { name, text }), snapshot: None, skill_root, warnings: Vec::new() }
    }
}

/// What a service declares about where its description comes from: the part of a pod
/// service the describe stage reads, or what `clawc describe` is pointed at.
#[derive(Clone, Debug)]
pub(crate) struct Declared {
    pub name: String,
    /// Where problems with the service as a whole are reported.
    pub loc: Loc,
    pub image: Option<Spanned<String>>,
    pub build: Option<Build>,
    pub describe_file: Option<Spanned<String>>,
    /// An `mcp-stdio` sidecar's command (a sidecar must have a descriptor).
    pub stdio: Option<StdioCommand>,
    pub sidecar: bool,
    /// An agent (its runner is looked up).
    pub agent: bool,
    /// Described by the descriptor `claw up` builds in for this name (claw-api, claw-wall).
    pub builtin: bool,
}

impl From<&Service> for Declared {
    fn from(s: &Service) -> Self {
        let role = s.claw.as_ref().map(|c| c.role);
        Declared {
            name: s.name.clone(),
            loc: s.loc,
            image: s.image.clone(),
            build: s.build.clone(),
            describe_file: s.claw.as_ref().and_then(|c| c.describe_file.clone()),
            stdio: s.claw.as_ref().and_then(|c| c.stdio.clone()),
            sidecar: role == Some(Role::McpStdio),
            agent: role == Some(Role::Agent),
            builtin: builtin::describes_pod_service(&s.name),
        }
    }
}

impl Declared {
    /// A service `claw up` injects: described by its built-in descriptor only.
    pub(crate) fn injected(name: &str, injected: &crate::pod::Injected) -> Self {
        Declared {
            name: name.to_string(),
            loc: injected.loc,
            image: None,
            build: None,
            describe_file: None,
            stdio: None,
            sidecar: false,
            agent: false,
            builtin: true,
        }
    }
}

/// Where a descriptor's `skill` file lives, and what it is confined to.
#[derive(Clone, Debug)]
pub(crate) enum SkillRoot {
    /// The directory of the descriptor file (`describe-file`, `--descriptor`, a
    /// `.claw-discovered/` snapshot) of a service with no build context.
    Dir(PathBuf),
    /// The service's build context.
    BuildContext(PathBuf),
    /// The image the descriptor came from.
    Image(std::sync::Arc<crate::image::ImageFacts>),
}

impl SkillRoot {
    /// The image the description was read from, when it was.
    pub(crate) fn image(&self) -> Option<ImageRef> {
        match self {
            SkillRoot::Image(f) => Some(ImageRef { reference: f.reference.clone(), id: f.info.id.clone() }),
            SkillRoot::Dir(_) | SkillRoot::BuildContext(_) => None,
        }
    }
}

/// One service to describe.
pub(crate) struct Request<'a> {
    pub pod_dir: &'a Path,
    pub service: &'a Declared,
    /// Every read goes through here, so the lock knows all inputs.
    pub log: &'a record::InputLog,
    /// The build Dockerfile, read at most once (for the descriptor label and the runner).
    dockerfile: OnceCell<Result<Option<Dockerfile>, Vec<Diagnostic>>>,
}

impl<'a> Request<'a> {
    pub(crate) fn new(pod_dir: &'a Path, service: &'a Declared, log: &'a record::InputLog) -> Self {
        Request { pod_dir, service, log, dockerfile: OnceCell::new() }
    }

    /// The build context's Dockerfile (`build.dockerfile`, else `Clawfile`, else
    /// `Dockerfile`), read on first use; `None` without a build or a file.
    pub(crate) fn dockerfile(&self) -> Result<Option<&Dockerfile>, Vec<Diagnostic>> {
        match self.dockerfile.get_or_init(|| read_dockerfile(self)) {
            Ok(d) => Ok(d.as_ref()),
            Err(ds) => Err(ds.clone()),
        }
    }
}

pub(crate) type SourceResult = Result<Option<Loaded>, Vec<Diagnostic>>;

pub(crate) trait DescriptorSource: Sync {
    /// The descriptor of `req.service`, `None` when this source has none for it.
    fn describe(&self, req: &Request) -> SourceResult;
}

/// The ordered chain of sources (each asked from several threads at once).
pub(crate) struct Sources(Vec<Box<dyn DescriptorSource>>);

impl Sources {
    /// Clawdapus' order, with `--descriptor SERVICE=PATH` overrides first.
    pub(crate) fn standard(overrides: BTreeMap<String, PathBuf>, images: std::sync::Arc<crate::image::ImageSet>) -> Self {
        Sources(vec![
            Box::new(builtin::BuiltIn),
            Box::new(command_line::CommandLine(overrides)),
            Box::new(describe_file::DescribeFile),
            Box::new(discovered::Discovered),
            Box::new(image::Image(images)),
            Box::new(build_context::BuildContext),
        ])
    }

    pub(crate) fn describe(&self, req: &Request) -> SourceResult {
        for source in &self.0 {
            if let Some(found) = source.describe(req)? {
                return Ok(Some(found));
            }
        }
        if req.service.sidecar {
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
pub(crate) fn read_required(req: &Request, path: &Path, kind: OriginKind, what: &str, loc: Option<crate::sourcemap::Loc>) -> SourceResult {
    let pod_dir = req.pod_dir;
    let name = fs::relative_name(pod_dir, path);
    let read = if kind == OriginKind::CommandLine {
        req.log.read_trusted(path, &name, "descriptor")
    } else {
        req.log.read(path, &name, "descriptor")
    };
    match read {
        Ok(text) => Ok(Some(Loaded::file(kind, name, text, SkillRoot::Dir(path.parent().unwrap_or(pod_dir).to_path_buf())))),
        Err(ReadError::Missing) => {
            let relative_to = if kind == OriginKind::CommandLine {
                "it is relative to the current directory"
            } else {
                "it is relative to the pod file's directory"
            };
            let d = Diagnostic::error(diags::MISSING, format!("{what} `{name}` does not exist"))
                .at_opt(loc)
                .help(format!("check the path; {relative_to}"));
            Err(vec![d])
        }
        Err(ReadError::Invalid(d) | ReadError::Io(d)) => Err(vec![d.at_opt(loc)]),
    }
}

/// Skills of build services resolve in the build context, others beside the descriptor.
pub(crate) fn with_build_root(mut loaded: Loaded, req: &Request) -> Loaded {
    if let Some(b) = &req.service.build {
        loaded.skill_root = SkillRoot::BuildContext(fs::normalize(&req.pod_dir.join(&b.context)));
    }
    loaded
}

/// Reads the skill files a descriptor or an image names, confined and recorded.
pub(crate) struct Skills<'a> {
    pub pod_dir: &'a Path,
    pub log: &'a record::InputLog,
}

impl Skills<'_> {
    /// The skill at `path` under `root` (a build context or an image): its source name
    /// and text. `named_by` is the label that named it, when not the descriptor.
    pub(crate) fn read(&self, root: &SkillRoot, path: &str, named_by: Option<&str>) -> Result<(String, String), Diagnostic> {
        // The boundary the skill is confined to, as messages name it.
        let (root, boundary) = match root {
            SkillRoot::BuildContext(d) => (d, fs::Boundary::BuildContext),
            SkillRoot::Dir(d) => (d, fs::Boundary::DescriptorDir),
            SkillRoot::Image(facts) => return image_file(facts, path, Some(named_by.unwrap_or("the descriptor's skill")), self.log),
        };
        let file = self.log.contained(root, path, boundary).map_err(|why| {
            let dir = fs::relative_name(self.pod_dir, root);
            let shown = if dir == "." { String::new() } else { format!(" (`{dir}/`)") };
            Diagnostic::error(diags::PATH_ESCAPE, format!("descriptor skill {why}"))
                .help(format!("a descriptor's skill names a file inside {}{shown}", boundary.the()))
        })?;
        let name = fs::relative_name(self.pod_dir, &file);
        match self.log.read(&file, &name, "skill") {
            Ok(text) => Ok((name, text)),
            Err(ReadError::Missing) => {
                Err(Diagnostic::error(diags::SKILL_NOT_FOUND, format!("descriptor skill \"{path}\" was not found in {}", boundary.the()))
                    .help(format!("expected `{name}`; add the file or remove \"skill\" from the descriptor")))
            }
            Err(ReadError::Invalid(d) | ReadError::Io(d)) => Err(d),
        }
    }
}

/// A file the image's labels or descriptor name (read by the image fetch), recorded in
/// the input log as `<image>:<path>`.
pub(crate) fn image_file(
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

/// What a build context's Dockerfile (or Clawfile) says about the service.
#[derive(Clone, Debug)]
pub(crate) struct Dockerfile {
    /// Pod-relative name of the file.
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// The Clawfile directive `CLAW_TYPE <runner>` (Clawdapus turns it into the
    /// `claw.type` label when it builds the image).
    pub claw_type: Option<String>,
}

fn read_dockerfile(req: &Request) -> Result<Option<Dockerfile>, Vec<Diagnostic>> {
    let Some(build) = &req.service.build else { return Ok(None) };
    let context = fs::normalize(&req.pod_dir.join(&build.context));
    let dockerfiles: Vec<PathBuf> = match &build.dockerfile {
        Some(d) => vec![context.join(d)],
        None => vec![context.join("Clawfile"), context.join("Dockerfile")],
    };
    for df in dockerfiles {
        let name = fs::relative_name(req.pod_dir, &df);
        match req.log.read(&df, &name, "dockerfile") {
            Ok(text) => {
                let parsed = dockerfile::parse(&text);
                return Ok(Some(Dockerfile { name, labels: parsed.labels, claw_type: parsed.claw_type }));
            }
            Err(ReadError::Missing) => {}
            Err(ReadError::Invalid(d) | ReadError::Io(d)) => return Err(vec![d.at(build.loc)]),
        }
    }
    Ok(None)
}

/// Where a service's runner was declared, and the name it gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RunnerDecl {
    /// The value as written (`claw.type` label or `CLAW_TYPE` directive).
    pub value: String,
    /// Where: `image <ref> label claw.type`, `<Dockerfile> LABEL claw.type`, or
    /// `<Clawfile> CLAW_TYPE`.
    pub from: String,
}

/// A label of the service's image: read from the image when a source had it, else from
/// the `LABEL` lines of its build's Dockerfile.
pub(crate) fn label(req: &Request, images: &crate::image::ImageSet, key: &str) -> Option<String> {
    let reference = req.service.image.as_ref().map(|i| &i.value);
    if let Some(facts) = reference.and_then(|r| images.found.get(r)) {
        return facts.label(key).map(String::from);
    }
    req.dockerfile().ok().flatten()?.labels.get(key).cloned()
}

/// The runner an agent declares: its image's `claw.type` label, else its build
/// Clawfile's `CLAW_TYPE` directive, else the Dockerfile's `LABEL claw.type`.
pub(crate) fn runner(req: &Request, images: &crate::image::ImageSet) -> Option<RunnerDecl> {
    let reference = req.service.image.as_ref().map(|i| &i.value);
    if let Some(value) = reference.and_then(|r| images.found.get(r)).and_then(|f| f.label(crate::image::TYPE_LABEL)) {
        let r = reference.map(String::as_str).unwrap_or_default();
        return Some(RunnerDecl { value: value.to_string(), from: format!("image {r} label {}", crate::image::TYPE_LABEL) });
    }
    // A Dockerfile that cannot be read was already reported by the build-context source.
    let d = req.dockerfile().ok().flatten()?;
    if let Some(value) = &d.claw_type {
        return Some(RunnerDecl { value: value.clone(), from: format!("{} CLAW_TYPE", d.name) });
    }
    let value = d.labels.get(crate::image::TYPE_LABEL)?;
    Some(RunnerDecl { value: value.clone(), from: format!("{} LABEL {}", d.name, crate::image::TYPE_LABEL) })
}
