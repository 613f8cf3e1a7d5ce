//! Writing the compiled tree: only changed files, staged first and then renamed into
//! place, stale files clawc wrote before removed, files it does not own never touched.
//!
//! Ownership is recorded in `<out>/.clawc-manifest.json`. Every new or changed file is
//! first written to a temporary file beside its target; only when all are staged are they
//! renamed over their targets (each rename is atomic), so a failure while staging leaves
//! the previous tree exactly as it was.

use super::ArtifactSet;
use crate::diag::Diagnostic;
use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

pub const MANIFEST: &str = ".clawc-manifest.json";

pub mod codes {
    pub const IO: &str = "clawc::output::io";
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WriteSummary {
    pub written: Vec<String>,
    pub unchanged: usize,
    pub removed: Vec<String>,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Diagnostic {
    Diagnostic::error(codes::IO, format!("cannot {what} `{}`: {e}", path.display())).help("check that the output directory is writable")
}

/// The files clawc wrote last time (only safe relative paths are believed).
pub fn owned(out: &Path) -> BTreeSet<String> {
    let Ok(text) = fs::read_to_string(out.join(MANIFEST)) else { return BTreeSet::new() };
    let files: Vec<String> = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("files").cloned())
        .and_then(|f| serde_json::from_value(f).ok())
        .unwrap_or_default();
    let mut set: BTreeSet<String> = files.into_iter().filter(|f| is_safe_relative(f)).collect();
    set.insert(MANIFEST.to_string());
    set
}

fn is_safe_relative(p: &str) -> bool {
    !p.is_empty() && Path::new(p).components().all(|c| matches!(c, Component::Normal(_)))
}

fn mode_of(secret: bool) -> u32 {
    if secret { 0o600 } else { 0o644 }
}

fn unchanged(target: &Path, bytes: &[u8], secret: bool) -> bool {
    let Ok(meta) = fs::symlink_metadata(target) else { return false };
    meta.is_file() && meta.permissions().mode() & 0o777 == mode_of(secret) && fs::read(target).is_ok_and(|old| old == bytes)
}

/// Writes `artifacts` (which must include the manifest, see [`ArtifactSet::with_manifest`]).
pub fn write_tree(out: &Path, artifacts: &ArtifactSet) -> Result<WriteSummary, Diagnostic> {
    let before = owned(out);
    let mut summary = WriteSummary::default();
    let mut staged: Vec<(tempfile::TempPath, PathBuf, String)> = Vec::new();
    for (rel, a) in &artifacts.0 {
        let target = out.join(rel);
        if unchanged(&target, &a.bytes, a.secret) {
            summary.unchanged += 1;
            continue;
        }
        let dir = target.parent().unwrap_or(out);
        fs::create_dir_all(dir).map_err(|e| io("create directory", dir, e))?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".clawc-stage-")
            .permissions(fs::Permissions::from_mode(mode_of(a.secret)))
            .tempfile_in(dir)
            .map_err(|e| io("stage a file in", dir, e))?;
        tmp.write_all(&a.bytes).map_err(|e| io("write", tmp.path(), e))?;
        staged.push((tmp.into_temp_path(), target, rel.clone()));
    }
    // Everything is staged: swap it in. (Dropping `staged` on an early return above
    // deletes the temporary files and leaves the old tree untouched.)
    for (tmp, target, rel) in staged {
        tmp.persist(&target).map_err(|e| io("replace", &target, e.error))?;
        summary.written.push(rel);
    }
    for stale in before.iter().filter(|f| !artifacts.0.contains_key(*f)) {
        let path = out.join(stale);
        match fs::remove_file(&path) {
            Ok(()) => summary.removed.push(stale.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("remove stale file", &path, e)),
        }
        remove_empty_parents(out, &path);
    }
    Ok(summary)
}

/// Removes directories left empty by a stale file, up to (not including) `out`.
fn remove_empty_parents(out: &Path, file: &Path) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == out || !d.starts_with(out) || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}
