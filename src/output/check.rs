//! Drift between a compiled [`ArtifactSet`] and the tree on disk, for `compile --check`.
//! Reads only; the same ownership rules as writing: a file is `delete`d only if clawc's
//! manifest says clawc wrote it.

use super::ArtifactSet;
use super::write::{codes, owned};
use crate::diag::Diagnostic;
use serde::Serialize;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Create,
    Update,
    Delete,
}

#[derive(Clone, Debug)]
pub struct FileDrift {
    pub path: String,
    pub kind: ChangeKind,
    /// Bytes on disk (empty for `create`).
    pub old: Vec<u8>,
    /// Bytes clawc would write (empty for `delete`).
    pub new: Vec<u8>,
}

impl FileDrift {
    /// Lines added and removed.
    pub fn stat(&self) -> (usize, usize) {
        let (old, new) = (String::from_utf8_lossy(&self.old), String::from_utf8_lossy(&self.new));
        let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
        diff.iter_all_changes().fold((0, 0), |(a, r), c| match c.tag() {
            similar::ChangeTag::Insert => (a + 1, r),
            similar::ChangeTag::Delete => (a, r + 1),
            similar::ChangeTag::Equal => (a, r),
        })
    }

    /// A unified diff (`--- a/path`, `+++ b/path`, 3 lines of context).
    pub fn unified(&self) -> String {
        let (old, new) = (String::from_utf8_lossy(&self.old), String::from_utf8_lossy(&self.new));
        let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
        let a = if self.kind == ChangeKind::Create { "/dev/null".to_string() } else { format!("a/{}", self.path) };
        let b = if self.kind == ChangeKind::Delete { "/dev/null".to_string() } else { format!("b/{}", self.path) };
        diff.unified_diff().context_radius(3).header(&a, &b).to_string()
    }
}

/// Every difference between `artifacts` and `out`, sorted by path.
pub fn drift(out: &Path, artifacts: &ArtifactSet) -> Result<Vec<FileDrift>, Diagnostic> {
    let mut found = Vec::new();
    for (rel, a) in &artifacts.0 {
        let path = out.join(rel);
        match std::fs::read(&path) {
            Ok(old) if old == a.bytes => {}
            Ok(old) => found.push(FileDrift { path: rel.clone(), kind: ChangeKind::Update, old, new: a.bytes.clone() }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                found.push(FileDrift { path: rel.clone(), kind: ChangeKind::Create, old: Vec::new(), new: a.bytes.clone() })
            }
            Err(e) => {
                return Err(Diagnostic::error(codes::IO, format!("cannot read `{}`: {e}", path.display()))
                    .help("check that the output directory is readable"));
            }
        }
    }
    for stale in owned(out).into_iter().filter(|f| !artifacts.0.contains_key(f)) {
        if let Ok(old) = std::fs::read(out.join(&stale)) {
            found.push(FileDrift { path: stale, kind: ChangeKind::Delete, old, new: Vec::new() });
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}
