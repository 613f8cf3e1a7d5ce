//! The skills a pod's operator lists (`x-claw.skills`, after `skills-defaults`), read from
//! disk: the I/O edge of skills in a pod compile. Each path is read once however many
//! agents list it, confined to the input root like every other input; a folder is read
//! whole (and confined to itself: a symlink inside it may not lead out), and the lock
//! records each file.

use super::carried::{Brought, Folder, Kind, Skill};
use super::codes;
use super::files::SkillDir;
use crate::diag::Diagnostic;
use crate::pod::Pod;
use crate::source::fs::{ReadError, relative_name};
use crate::source::record::InputLog;
use crate::sourcemap::{Loc, SourceMap};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The role the lock gives a skill folder as a whole: its listing can change without any
/// recorded file changing, so `--check` cannot vouch for it from file hashes.
pub(crate) const FOLDER_ROLE: &str = "skill-folder";

/// Every operator skill of the pod, by the path as written (after placeholders).
pub(crate) type Read = BTreeMap<String, Arc<Skill>>;

/// Reads every distinct `x-claw.skills` path of the pod's agents. A path that cannot be
/// read is reported once, at its first listing.
pub(crate) fn read(pod: &Pod, pod_dir: &Path, log: &InputLog, sources: &mut SourceMap) -> (Read, Vec<Diagnostic>) {
    let mut out = BTreeMap::new();
    let mut diags = Vec::new();
    let mut failed = std::collections::BTreeSet::new();
    let mut total: u64 = 0;
    for svc in pod.services.values() {
        let Some(claw) = &svc.claw else { continue };
        for entry in &claw.skills {
            if out.contains_key(&entry.value) || failed.contains(&entry.value) {
                continue;
            }
            match read_one(&entry.value, entry.loc, pod_dir, log, sources) {
                Ok((skill, ds)) => {
                    diags.extend(ds);
                    total += skill.size();
                    if total > super::files::MAX_TOTAL_BYTES {
                        diags.push(
                            Diagnostic::error(
                                codes::TOO_LARGE,
                                format!("the pod's skills hold more than {} bytes in all", super::files::MAX_TOTAL_BYTES),
                            )
                            .at(entry.loc)
                            .help("skills hold instructions, manifests and small scripts; move large data elsewhere"),
                        );
                        return (out, diags);
                    }
                    out.insert(entry.value.clone(), Arc::new(skill));
                }
                Err(ds) => {
                    diags.extend(ds);
                    failed.insert(entry.value.clone());
                }
            }
        }
    }
    (out, diags)
}

/// One skill: a file, or a folder holding `SKILL.md`.
fn read_one(
    written: &str,
    loc: Loc,
    pod_dir: &Path,
    log: &InputLog,
    sources: &mut SourceMap,
) -> Result<(Skill, Vec<Diagnostic>), Vec<Diagnostic>> {
    let shown = crate::diag::printable(written);
    let at = |d: Diagnostic| vec![d.at(loc)];
    if written.trim().is_empty() || written.contains('\0') {
        return Err(at(Diagnostic::error(codes::NOT_FOUND, format!("skill \"{shown}\" is not a path"))
            .help("list a markdown file or a skill folder, relative to the pod's directory")));
    }
    let path = crate::source::fs::normalize(&std::path::absolute(pod_dir.join(written)).unwrap_or_else(|_| pod_dir.join(written)));
    let name = relative_name(&std::path::absolute(pod_dir).unwrap_or_else(|_| pod_dir.to_path_buf()), &path);
    let not_found = || {
        at(Diagnostic::error(codes::NOT_FOUND, format!("skill \"{shown}\" was not found"))
            .help(format!("expected `{}` (relative to the pod's directory); add it or remove the entry", crate::diag::printable(&name))))
    };
    if !log.holds(&path) {
        return Err(at(Diagnostic::error(crate::source::diags::PATH_ESCAPE, format!("skill \"{shown}\" resolves outside the input root"))
            .help("skills are read only inside the repository that holds the pod; move the skill in, or widen the root with --root DIR")));
    }
    let meta = match path.metadata() {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            log.record(&name, "skill", None);
            return Err(not_found());
        }
        Err(_) => return Err(not_found()),
    };
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !crate::disk::is_safe_relative(&file_name) || file_name.contains('/') || file_name.chars().any(char::is_control) {
        return Err(at(Diagnostic::error(
            crate::source::diags::INVALID_SKILL_NAME,
            format!("skill path \"{shown}\" does not end in a file or folder name"),
        )
        .help("name the skill file or folder itself, e.g. skills/git-pr.md")));
    }
    if meta.is_dir() {
        return read_folder(&path, &name, file_name, loc, log, sources);
    }
    match log.read(&path, &name, "skill") {
        Ok(text) => Ok((Skill::file(file_name, name, text.into(), sources), Vec::new())),
        Err(ReadError::Missing) => Err(not_found()),
        Err(ReadError::Invalid(d) | ReadError::Io(d)) => Err(at(d)),
    }
}

/// A skill folder: every file, its `SKILL.md`, and the tools a `tools.json` or a
/// `tool-manifest.yaml` brings (checked as `clawc skill compile` checks them).
fn read_folder(
    path: &Path,
    name: &str,
    file_name: String,
    loc: Loc,
    log: &InputLog,
    sources: &mut SourceMap,
) -> Result<(Skill, Vec<Diagnostic>), Vec<Diagnostic>> {
    let prefix = format!("{name}/");
    let dir = SkillDir::open(path, &prefix).map_err(|d| vec![d.at(loc)])?;
    let mut diags = Vec::new();
    let skill_md = dir.read_text(super::SKILL_MD).map_err(|d| vec![d])?;
    let Some(skill_md) = skill_md else {
        return Err(vec![
            Diagnostic::error(codes::INVALID_PACKAGE, format!("skill folder `{}` has no {}", dir.shown_dir(), super::SKILL_MD))
                .at(loc)
                .help("a skill folder holds SKILL.md (Agent Skills layout); list a markdown file instead, or add SKILL.md"),
        ]);
    };
    let mut kind = Kind::Markdown;
    let mut brought = Vec::new();
    let mut invalid = Vec::new();
    if dir.has(super::TOOL_MANIFEST) {
        kind = Kind::ToolManifest;
        let (manifest, ds) = super::manifest::load(&dir, sources);
        diags.extend(ds);
        if let Some(m) = manifest {
            brought = m.tools.iter().map(Brought::of_dynamic).collect();
            invalid = m.invalid;
        }
    } else if dir.has(super::TOOLS_JSON) {
        kind = Kind::SkillTools;
        let (package, ds) = super::package::load(&dir, sources);
        diags.extend(ds);
        if let Some(p) = package {
            brought = p.tools.iter().map(Brought::of_skill_tool).collect();
            invalid = p.invalid;
        }
    }
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    let files = dir.read_all()?;
    // Every file keeps its name in the agent's tree: refuse a name the tree cannot hold
    // now, as the input error it is, rather than at write time.
    let unsafe_names: Vec<Diagnostic> = files
        .keys()
        .filter(|rel| !crate::disk::is_safe_relative(rel) || rel.chars().any(|c| c.is_control() || c == char::REPLACEMENT_CHARACTER))
        .map(|rel| {
            Diagnostic::error(
                crate::source::diags::INVALID_SKILL_NAME,
                format!("`{}` cannot be copied into an agent's tree: its name holds a backslash, a control character or bytes that are not UTF-8", dir.shown(rel)),
            )
            .at(loc)
            .help("rename the file inside the skill folder")
        })
        .collect();
    if !unsafe_names.is_empty() {
        return Err(unsafe_names);
    }
    for (rel, f) in &files {
        log.record(&format!("{name}/{rel}"), "skill", Some(f.bytes.as_deref().unwrap_or_default()));
    }
    // The listing itself, so the lock changes when a file is added or removed.
    let listing: String = files.iter().map(|(rel, f)| format!("{} {rel}\n", f.sha256)).collect();
    log.record(name, FOLDER_ROLE, Some(listing.as_bytes()));
    let folder = Folder { files, kind, tools: brought, invalid };
    Ok((Skill::folder(file_name, name.to_string(), &skill_md, folder, sources), diags))
}
