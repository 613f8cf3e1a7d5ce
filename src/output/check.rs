//! Drift between a compiled [`ArtifactSet`] and the tree on disk, for `compile --check`.
//! Reads only, and only what [`crate::disk`] allows: the committed tree is untrusted, so a
//! symlink, FIFO, device or directory where clawc expects its own file is drift reported
//! by its kind, and its target is never read. A file is a `delete` only if the compile
//! would delete it (a regular file whose hash the previous lock records).

use super::known::{Known, NewLock};
use super::write::{LEGACY_MANIFEST, NONE, Previous, codes, is_what_clawc_wrote, legacy_manifest_bytes, previous_lock};
use crate::artifact::ArtifactSet;
use crate::diag::Diagnostic;
use crate::disk::{self, Contents, Kind};
use crate::lock::LOCK;
use serde::Serialize;
use std::collections::BTreeMap;
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
    /// Bytes on disk (empty for `create`, and when what is there was not read).
    pub old: Vec<u8>,
    /// Bytes clawc would write (empty for `delete`).
    pub new: Vec<u8>,
    /// What is on disk when it was not read: "a symlink", "a FIFO", "a directory",
    /// "a file too large to show", or "a symlink at `context`" for a blocked path.
    pub found: Option<String>,
}

impl FileDrift {
    /// Lines added and removed.
    pub(crate) fn stat(&self) -> (usize, usize) {
        let (old, new) = (String::from_utf8_lossy(&self.old), String::from_utf8_lossy(&self.new));
        let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
        diff.iter_all_changes().fold((0, 0), |(a, r), c| match c.tag() {
            similar::ChangeTag::Insert => (a + 1, r),
            similar::ChangeTag::Delete => (a, r + 1),
            similar::ChangeTag::Equal => (a, r),
        })
    }

    /// A unified diff (`--- a/path`, `+++ b/path`, 3 lines of context). Control characters
    /// of the old side (which the pull request wrote) are shown escaped, so a committed file
    /// cannot drive the terminal or the CI log.
    pub(crate) fn unified(&self) -> String {
        let old = crate::diag::printable(&String::from_utf8_lossy(&self.old));
        let new = String::from_utf8_lossy(&self.new);
        let diff = similar::TextDiff::from_lines(old.as_str(), new.as_ref());
        let a = match (&self.found, self.kind) {
            (_, ChangeKind::Create) => "/dev/null".to_string(),
            (Some(found), _) => format!("a/{} ({found}; not read)", self.path),
            (None, _) => format!("a/{}", self.path),
        };
        let b = if self.kind == ChangeKind::Delete { "/dev/null".to_string() } else { format!("b/{}", self.path) };
        diff.unified_diff().context_radius(3).header(&a, &b).to_string()
    }
}

/// Every difference between `artifacts` and `out`, sorted by path.
pub fn drift(out: &Path, artifacts: &ArtifactSet, secrets: &BTreeMap<String, String>) -> Result<Vec<FileDrift>, Diagnostic> {
    drift_with(out, artifacts, secrets, None, &[])
}

/// [`drift`]; with `records` (the stat records' directory, none of it inside `untrusted`),
/// a file the previous lock and its record vouch for already holding its new bytes is not
/// read (see [`super::known`]).
pub fn drift_with(
    out: &Path,
    artifacts: &ArtifactSet,
    secrets: &BTreeMap<String, String>,
    records: Option<&Path>,
    untrusted: &[&Path],
) -> Result<Vec<FileDrift>, Diagnostic> {
    let mut found = Vec::new();
    if let Some(kind) = disk::not_a_directory(out) {
        let what = format!("the output directory is {}", kind.describe());
        let all = artifacts.0.iter().map(|(rel, a)| FileDrift {
            path: rel.clone(),
            kind: ChangeKind::Update,
            old: Vec::new(),
            new: a.bytes.to_vec(),
            found: Some(what.clone()),
        });
        return Ok(all.collect());
    }
    let lock = previous_lock(out)?;
    let previous = lock.outputs().unwrap_or(&NONE);
    let new_lock = NewLock::among(artifacts);
    let hashes = new_lock.as_ref().map(NewLock::hashes).unwrap_or_default();
    let known = match (records, &lock, &new_lock) {
        (Some(_), Previous::Lock(lock), Some(new)) => Some(Known::load(out, Some(lock), new.redacted(), records, untrusted)),
        _ => None,
    };
    let mut dirs = disk::Dirs::default();
    for (rel, a) in &artifacts.0 {
        if let Some(known) = &known
            && let Ok(disk::Found::File(meta)) = disk::inspect_in(out, rel, &mut dirs)
            && let Some(sha256) = hashes.get(rel.as_str())
            && known.vouches(previous, rel, a, sha256, &meta)
        {
            continue;
        }
        let change = |kind, old, found| FileDrift { path: rel.clone(), kind, old, new: a.bytes.to_vec(), found };
        match read(out, rel, disk::MAX_OUTPUT.max(a.bytes.len() as u64), &mut dirs)? {
            Contents::Bytes(old) if *old == *a.bytes => {}
            Contents::Bytes(old) => found.push(change(ChangeKind::Update, old, None)),
            Contents::Missing => found.push(change(ChangeKind::Create, Vec::new(), None)),
            Contents::TooLarge(n) => found.push(change(ChangeKind::Update, Vec::new(), Some(format!("a file of {n} bytes")))),
            Contents::Foreign { at, kind } => found.push(change(ChangeKind::Update, Vec::new(), Some(foreign(rel, &at, kind)))),
        }
    }
    for (rel, (_, hash)) in previous.iter().filter(|(r, _)| !artifacts.0.contains_key(*r) && *r != LOCK) {
        if let Contents::Bytes(old) = read(out, rel, disk::MAX_OUTPUT, &mut dirs)?
            && is_what_clawc_wrote(&old, hash, secrets)
        {
            found.push(FileDrift { path: rel.clone(), kind: ChangeKind::Delete, old, new: Vec::new(), found: None });
        }
    }
    if let Some(old) = legacy_manifest_bytes(out) {
        found.push(FileDrift { path: LEGACY_MANIFEST.to_string(), kind: ChangeKind::Delete, old, new: Vec::new(), found: None });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

fn read(out: &Path, rel: &str, limit: u64, dirs: &mut disk::Dirs) -> Result<Contents, Diagnostic> {
    disk::read_in(out, rel, limit, dirs).map_err(|e| {
        Diagnostic::error(codes::IO, format!("cannot read `{}`: {e}", out.join(rel).display()))
            .help("check that the output directory is readable")
    })
}

fn foreign(rel: &str, at: &str, kind: Kind) -> String {
    if at == rel { kind.describe().to_string() } else { format!("{} at `{at}`", kind.describe()) }
}
