//! Drift between a compiled tree and the tree on disk, for `compile --check`: found as
//! the compile puts each batch ([`Drift`], a sink), or over an [`ArtifactSet`] ([`drift`]).
//! Reads only, and only what [`crate::disk`] allows: the committed tree is untrusted, so a
//! symlink, FIFO, device or directory where clawc expects its own file is drift reported
//! by its kind, and its target is never read. A file is a `delete` only if the compile
//! would delete it (a regular file whose hash the previous lock records).

use super::known::{Known, LockView};
use super::sink::Sink;
use super::write::{Kept, LEGACY_MANIFEST, NONE, Previous, codes, is_what_clawc_wrote, legacy_manifest_bytes, previous_lock};
use crate::artifact::{ArtifactSet, Output};
use crate::diag::Diagnostic;
use crate::disk::{self, Contents, Kind};
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
    // Vouching needs the hash the new lock records for a file; without a lock in the set
    // (or with tokens in it) nothing is vouched for, as an empty hash matches none.
    let new_lock = LockView::among(artifacts);
    let hashes = new_lock.as_ref().map(LockView::hashes).unwrap_or_default();
    let redacted = new_lock.as_ref().is_some_and(LockView::redacted);
    let mut drift = Drift::new(out, redacted, records.filter(|_| new_lock.is_some()), untrusted);
    let batch = artifacts.0.iter().map(|(rel, a)| {
        let sha256 = hashes.get(rel.as_str()).map(ToString::to_string).unwrap_or_default();
        Output { path: rel.as_str().into(), artifact: a.clone(), sha256 }
    });
    drift.put(batch.collect())?;
    drift.finish(secrets)
}

/// Drift found as the compile puts the tree, a batch at a time (`compile --check` when
/// the lock cannot answer): each file is compared with what is on disk and only what
/// differs is kept, so the check holds a batch and its differences, not the tree.
pub(crate) struct Drift<'a> {
    out: &'a Path,
    redacted: bool,
    records: Option<&'a Path>,
    untrusted: &'a [&'a Path],
    open: Option<Open>,
}

/// What a drift keeps from its first batch on.
struct Open {
    previous: Previous,
    known: Option<Known>,
    /// Which of the previous lock's outputs the compile put again: the rest would be deleted.
    kept: Kept,
    dirs: disk::Dirs,
    /// `--out` is not a directory: every file is drift, found as this.
    not_a_directory: Option<String>,
    found: Vec<FileDrift>,
}

impl<'a> Drift<'a> {
    /// The drift of a tree that is `redacted` (whose files may be vouched for by a stat
    /// record in `records`) or not, against `out`. Reads nothing yet.
    pub(crate) fn new(out: &'a Path, redacted: bool, records: Option<&'a Path>, untrusted: &'a [&'a Path]) -> Self {
        Drift { out, redacted, records, untrusted, open: None }
    }

    fn open(&mut self) -> Result<&mut Open, Diagnostic> {
        if self.open.is_none() {
            let not_a_directory = disk::not_a_directory(self.out).map(|kind| format!("the output directory is {}", kind.describe()));
            let previous = if not_a_directory.is_some() { Previous::Missing } else { previous_lock(self.out, usize::MAX, None)? };
            let known = match &previous {
                Previous::Lock(lock) if self.records.is_some() => {
                    Some(Known::load(self.out, Some(lock), self.redacted, self.records, self.untrusted))
                }
                _ => None,
            };
            let kept = Kept::new(&previous);
            self.open = Some(Open { previous, known, kept, dirs: disk::Dirs::default(), not_a_directory, found: Vec::new() });
        }
        Ok(self.open.as_mut().expect("opened above"))
    }

    /// Every difference, sorted by path, once the compile has put the whole tree: with the
    /// previous tree's files the compile would delete (`secrets` tells a file clawc wrote
    /// with inline tokens).
    pub(crate) fn finish(mut self, secrets: &BTreeMap<String, String>) -> Result<Vec<FileDrift>, Diagnostic> {
        let out = self.out;
        let open = self.open()?;
        let mut found = std::mem::take(&mut open.found);
        if open.not_a_directory.is_none() {
            let previous = open.previous.outputs().unwrap_or(&*NONE);
            // Held (a check writes nothing), so read back whole.
            for (rel, hash) in open.kept.stale(previous).map_err(|e| super::write::spill_failed(&e))? {
                let rel = &*rel;
                if let Contents::Bytes(old) = read(out, rel, disk::MAX_OUTPUT, &mut open.dirs)?
                    && is_what_clawc_wrote(&old, hash.as_ref(), secrets)
                {
                    found.push(FileDrift { path: rel.to_string(), kind: ChangeKind::Delete, old, new: Vec::new(), found: None });
                }
            }
            if let Some(old) = legacy_manifest_bytes(out) {
                found.push(FileDrift { path: LEGACY_MANIFEST.to_string(), kind: ChangeKind::Delete, old, new: Vec::new(), found: None });
            }
        }
        found.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(found)
    }
}

impl Sink for Drift<'_> {
    fn put(&mut self, batch: Vec<Output>) -> Result<(), Diagnostic> {
        let out = self.out;
        let open = self.open()?;
        let previous = open.previous.outputs().unwrap_or(&*NONE);
        for Output { path: rel, artifact: a, sha256 } in batch {
            open.kept.mark(previous, &rel);
            let change = |kind, old, found| FileDrift { path: rel.to_string(), kind, old, new: a.bytes.to_vec(), found };
            if let Some(what) = &open.not_a_directory {
                open.found.push(change(ChangeKind::Update, Vec::new(), Some(what.clone())));
                continue;
            }
            if let Some(known) = &open.known
                && let Ok(disk::Found::File(meta)) = disk::inspect_in(out, &rel, &mut open.dirs)
                && known.vouches(previous, &rel, a.mode(), a.secret, &sha256, &meta).is_some()
            {
                continue;
            }
            match read(out, &rel, disk::MAX_OUTPUT.max(a.bytes.len() as u64), &mut open.dirs)? {
                Contents::Bytes(old) if *old == *a.bytes => {}
                Contents::Bytes(old) => open.found.push(change(ChangeKind::Update, old, None)),
                Contents::Missing => open.found.push(change(ChangeKind::Create, Vec::new(), None)),
                Contents::TooLarge(n) => open.found.push(change(ChangeKind::Update, Vec::new(), Some(format!("a file of {n} bytes")))),
                Contents::Foreign { at, kind } => open.found.push(change(ChangeKind::Update, Vec::new(), Some(foreign(&rel, &at, kind)))),
            }
        }
        Ok(())
    }
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
