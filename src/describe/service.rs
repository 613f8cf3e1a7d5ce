//! The describe stage: what one service is, from what its sources read. A [`Described`]
//! holds the normalised descriptor (v1, v2, or a converted `.claw-tools.json` snapshot,
//! merged with the descriptor of the same image), each tool with its typed transport,
//! feeds, memory, auth, the skill file, the runner, and where each came from.
//!
//! It takes no pod: the request is a [`Declared`] service (from a pod, or from what
//! `clawc describe` was pointed at) and what [`crate::source`] read for it. The only file
//! it asks for is the one named inside the descriptor (`skill`), through
//! [`source::Skills`], which confines and records the read.

use super::json_span::{Seg, locate};
use super::{Descriptor, SharedDescriptor, decode, merge, snapshot};
use crate::diag::{Diagnostic, Diagnostics};
use crate::image::diags as image_diags;
use crate::origin::OriginKind;
use crate::runner;
use crate::source::{self, Declared, ImageRef, Loaded, RunnerDecl, SkillRoot, Snapshot, Text, diags as source_diags};
use crate::sourcemap::{FileId, Loc, SourceMap};
use std::sync::Arc;

/// Everything clawc knows about one service.
#[derive(Clone, Debug, Hash)]
pub struct Described {
    pub name: String,
    /// The runner the service declares (agents only, in a pod).
    pub runner: Option<RunnerFact>,
    /// The service's descriptor, when some source has one.
    pub descriptor: Option<ServiceDescriptor>,
}

/// A runner and where it was declared.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct RunnerFact {
    pub runner: runner::Declared,
    /// `image <ref> label claw.type`, `<Clawfile> CLAW_TYPE`, `<Dockerfile> LABEL claw.type`.
    pub from: String,
}

/// A service's descriptor and where it came from.
#[derive(Clone, Debug, Hash)]
pub struct ServiceDescriptor {
    /// Shared with what `compile --watch` keeps between compiles ([`super::Decoded`]):
    /// cloning a descriptor's schemas was a tenth of a watched one-agent edit.
    pub descriptor: Arc<SharedDescriptor>,
    /// The descriptor's text in the source map (a converted snapshot's when the service
    /// has only a snapshot).
    pub file: FileId,
    pub origin: OriginKind,
    /// The image it was read from (origin `image`): reference and image ID.
    pub image: Option<ImageRef>,
    /// The baked `tools/list` snapshot whose tools joined the descriptor's, as read.
    pub snapshot: Option<String>,
    pub skill: Option<Skill>,
}

/// A skill file a service ships.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Skill {
    /// The file name it is written under (`context/<agent>/skills/<name>`).
    pub name: String,
    /// Where it was read: pod-relative path, or `<image>:<path>`.
    pub source: String,
    pub text: String,
}

/// What the sources read for one service.
pub(crate) struct Input {
    /// The first source that had a descriptor or snapshot (or its error).
    pub loaded: Result<Option<Loaded>, Vec<Diagnostic>>,
    pub runner: Option<RunnerDecl>,
}

/// Describes one service. Problems go to `diags`; a descriptor with an error is left out.
pub(crate) fn describe(
    service: &Declared,
    input: Input,
    skills: &source::Skills,
    sources: &mut SourceMap,
    diags: &mut Diagnostics,
) -> Described {
    let registered = register(service, input, sources);
    let (described, ds) = decode_registered(service, &registered, skills, sources, &Decoding::default());
    diags.extend(ds);
    described
}

/// What the sources read for one service, its texts added to the source map: what is
/// left to do ([`decode_registered`]) reads the map, so services can be decoded on every
/// core while the map's file ids stay in the order the services are registered.
pub(crate) struct Registered {
    runner: Option<RunnerFact>,
    texts: Result<Option<Texts>, Vec<Diagnostic>>,
}

impl Registered {
    /// What decoding it costs, about: the bytes of its texts.
    pub(crate) fn weight(&self, sources: &SourceMap) -> usize {
        let Ok(Some(t)) = &self.texts else { return 1 };
        let files = t.descriptor.iter().chain(t.snapshot.as_ref().and_then(|(_, f, _)| f.as_ref()));
        1 + files.map(|f| sources.get(*f).text.len()).sum::<usize>()
    }
}

struct Texts {
    kind: OriginKind,
    warnings: Vec<Diagnostic>,
    /// The descriptor's text.
    descriptor: Option<FileId>,
    /// The snapshot's name, and its conversion to a descriptor's text (or why not), with
    /// the conversion's warnings.
    snapshot: Option<(String, Option<FileId>, Vec<Diagnostic>)>,
    skill_root: SkillRoot,
}

/// Adds what `input` read for `service` to the source map: the descriptor's text, then
/// the snapshot's converted to a descriptor's.
pub(crate) fn register(service: &Declared, input: Input, sources: &mut SourceMap) -> Registered {
    let runner = input.runner.map(|d| RunnerFact { runner: runner::Declared::parse(&d.value), from: d.from });
    let texts = input.loaded.map(|loaded| {
        loaded.map(|Loaded { kind, descriptor, snapshot, skill_root, warnings }| {
            let descriptor = descriptor.map(|text| sources.add(text.name, text.text));
            let snapshot = snapshot.map(|s| {
                let mut ds = Diagnostics::default();
                let file = converted(service, &s, sources, &mut ds);
                (s.file.name, file, ds.0)
            });
            Texts { kind, warnings, descriptor, snapshot, skill_root }
        })
    });
    Registered { runner, texts }
}

/// Where decoded descriptors may be taken from instead of decoding them again: what
/// earlier compiles in this process kept, then what an earlier one kept in the user cache.
#[derive(Default)]
pub(crate) struct Decoding<'a> {
    pub kept: super::Decoded,
    pub cache: Option<&'a super::Cache>,
}

/// Decodes what [`register`] added for `service`, merges a snapshot's tools into the
/// descriptor's and reads its skill. Problems come back in the order they are found; a
/// descriptor with an error is left out.
/// What an earlier compile decoded of the same texts is taken from `kept`.
pub(crate) fn decode_registered(
    service: &Declared,
    registered: &Registered,
    skills: &source::Skills,
    sources: &SourceMap,
    kept: &Decoding<'_>,
) -> (Described, Vec<Diagnostic>) {
    let mut diags = Diagnostics::default();
    let descriptor = match &registered.texts {
        Ok(Some(texts)) => descriptor(service, texts, skills, sources, kept, &mut diags),
        Ok(None) => None,
        Err(ds) => {
            diags.extend(ds.iter().map(|d| if d.loc.is_none() { d.clone().at(service.loc) } else { d.clone() }));
            None
        }
    };
    (Described { name: service.name.clone(), runner: registered.runner.clone(), descriptor }, diags.0)
}

fn descriptor(
    service: &Declared,
    texts: &Texts,
    skills: &source::Skills,
    sources: &SourceMap,
    kept: &Decoding<'_>,
    diags: &mut Diagnostics,
) -> Option<ServiceDescriptor> {
    let Texts { kind, warnings, descriptor, snapshot, skill_root } = texts;
    diags.extend(warnings.iter().cloned());
    let snapshot_name = snapshot.as_ref().map(|(name, _, _)| name.clone());
    // The snapshot's conversion and decoding report after the descriptor's decoding.
    let converted = |diags: &mut Diagnostics| {
        let (_, file, ds) = snapshot.as_ref()?;
        diags.extend(ds.iter().cloned());
        file.and_then(|f| decoded(f, sources, kept, diags))
    };
    let (file, descriptor) = match *descriptor {
        Some(file) => {
            let d = decoded(file, sources, kept, diags).map(|(_, d)| d);
            let d = match snapshot_name {
                Some(_) => d.zip(converted(diags)).and_then(|(d, (snap, t))| {
                    let (d, t) = (Arc::unwrap_or_clone(d).into_inner(), Arc::unwrap_or_clone(t).into_inner());
                    merge::with_snapshot(d, t, file, snap, sources).map(Arc::from).map_err(|e| diags.push(e)).ok()
                }),
                None => d,
            };
            (file, d?)
        }
        None => converted(diags)?,
    };
    let skill = skill(service, skill_root, &descriptor, file, skills, sources, diags);
    Some(ServiceDescriptor { descriptor, file, origin: *kind, image: skill_root.image(), snapshot: snapshot_name, skill })
}

/// Decodes a text already in the source map (or takes what an earlier compile did).
fn decoded(file: FileId, sources: &SourceMap, with: &Decoding<'_>, diags: &mut Diagnostics) -> Option<(FileId, Arc<SharedDescriptor>)> {
    let src = sources.get(file);
    let (d, ds) = with.kept.get_or(file, src, || {
        let decode = || {
            let (d, ds) = decode(file, src);
            (d.map(Arc::from), ds)
        };
        match with.cache {
            Some(cache) => cache.get_or(&src.text, decode),
            None => decode(),
        }
    });
    diags.extend(ds);
    d.map(|d| (file, d))
}

/// A snapshot converted to a descriptor (as `claw discover` converts `tools/list`) and
/// added to the source map as `<name> (as descriptor)`.
fn converted(service: &Declared, s: &Snapshot, sources: &mut SourceMap, diags: &mut Diagnostics) -> Option<FileId> {
    match convert_snapshot(&service.name, s) {
        Ok((text, warnings)) => {
            diags.extend(warnings);
            Some(sources.add(format!("{} (as descriptor)", s.file.name), text))
        }
        Err(d) => {
            diags.push(d);
            None
        }
    }
}

/// A snapshot's text → the JSON text of the descriptor it stands for, and a warning when
/// it holds one page of several.
pub(crate) fn convert_snapshot(service: &str, s: &Snapshot) -> Result<(String, Vec<Diagnostic>), Diagnostic> {
    let Text { name, text } = &s.file;
    let help = "bake the JSON result of MCP tools/list, e.g. {\"tools\": [...]}";
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        Diagnostic::error(image_diags::INVALID_SNAPSHOT, format!("`{name}` is not valid JSON: {e}")).at_opt(s.loc).help(help)
    })?;
    let (descriptor, partial) = snapshot::to_descriptor(service, &value, &s.mcp_path)
        .map_err(|e| Diagnostic::error(image_diags::INVALID_SNAPSHOT, format!("`{name}`: {}", e.0)).at_opt(s.loc).help(help))?;
    let mut warnings = Vec::new();
    if partial {
        warnings.push(
            Diagnostic::warning(image_diags::PARTIAL_SNAPSHOT, format!("`{name}` has a nextCursor: it holds one page of tools/list"))
                .at_opt(s.loc)
                .help("bake every page (follow nextCursor until it is absent) so no tool is missing"),
        );
    }
    Ok((serde_json::to_string_pretty(&descriptor).expect("JSON values serialize") + "\n", warnings))
}

/// The descriptor's `skill` file, else the one its image emits (`claw.skill.emit`).
fn skill(
    service: &Declared,
    root: &SkillRoot,
    descriptor: &Descriptor,
    file: FileId,
    skills: &source::Skills,
    sources: &SourceMap,
    diags: &mut Diagnostics,
) -> Option<Skill> {
    let read = |path: &str, named_by: Option<&str>| {
        skill_name(path).and_then(|name| skills.read(root, path, named_by).map(|(source, text)| Skill { name, source, text }))
    };
    if let Some(path) = &descriptor.skill {
        let (a, b) = locate(&sources.get(file).text, &[Seg::Key("skill".into())]);
        let loc = Loc { file, span: sources.get(file).span(a, b) };
        return read(path, None).map_err(|d| diags.push(d.at(loc))).ok();
    }
    let SkillRoot::Image(facts) = root else { return None };
    let raw = facts.label(crate::image::SKILL_EMIT_LABEL)?;
    read(raw, Some(crate::image::SKILL_EMIT_LABEL)).map_err(|d| diags.push(d.at_opt(service.image.as_ref().map(|i| i.loc)))).ok()
}

/// The last component of a path (`skills/api.md` → `api.md`).
pub(crate) fn basename(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().unwrap_or(p)
}

/// The file name a skill is written under (`context/<agent>/skills/<name>`): the last
/// component of its path, which must be a plain name.
fn skill_name(path: &str) -> Result<String, Diagnostic> {
    let name = basename(path);
    if crate::disk::is_safe_relative(name) && !name.contains('/') {
        return Ok(name.to_string());
    }
    Err(Diagnostic::error(source_diags::INVALID_SKILL_NAME, format!("skill path \"{path}\" does not end in a file name"))
        .help("name the skill file itself, e.g. skills/api.md"))
}
