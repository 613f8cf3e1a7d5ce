//! Input files read by an earlier compile in the same process (`compile --watch`), kept
//! while the kernel says nothing on their way changed, so a recompile after an edit of
//! the pod does not resolve, read and hash every descriptor, Dockerfile and snapshot
//! again (a tenth of a watched one-agent edit of a large pod).
//!
//! A read is replayed only when it is exactly what reading again would give. That holds
//! for a path while a watch that began before it was read reports no change to the file,
//! to any directory on its way from `/`, or to the names on that way (`watch::Inputs`,
//! which calls such a path covered). So a read is kept only when its path was covered as
//! it was read, and dropped on any change the watch reports under it, when the watch that
//! covered it ends before another covers it, or when the queue overflows. A file first
//! read by one compile is replayed from the compile after next. Only whole outcomes are
//! kept: the text, or the file's absence; a read that failed is read again.

use crate::disk::Stamp;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// What one read found: the text, its SHA-256 and the file's stamp as read (all `None`:
/// the file is absent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub text: Option<String>,
    pub sha256: Option<String>,
    pub stamp: Option<Stamp>,
}

#[derive(Default)]
struct State {
    /// Reads that may be replayed, by the path as the compile asked for it.
    kept: HashMap<PathBuf, Outcome>,
    /// Paths a live watch has covered since before now.
    covered: HashSet<PathBuf>,
    /// Every confined path the compile under way read or replayed, for the next watch.
    read: Vec<PathBuf>,
    /// The input root the reads were confined to: a read inside one root may be refused
    /// by another (`--root` in a `clawc.toml` edited while watching).
    root: PathBuf,
}

/// Input reads kept between compiles: none unless made with [`KeptReads::kept`]. Clones
/// share what is kept.
#[derive(Clone, Default)]
pub struct KeptReads(Option<Arc<Mutex<State>>>);

impl std::fmt::Debug for KeptReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("KeptReads").field(&self.0.as_ref().map(|s| lock(s).kept.len())).finish()
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl KeptReads {
    /// One that keeps what a compile reads under a watch, for the next compiles.
    pub fn kept() -> KeptReads {
        KeptReads(Some(Arc::default()))
    }

    /// A compile's reads are confined to `root`: what was read within another is dropped.
    pub(crate) fn confined_to(&self, root: &Path) {
        let Some(state) = &self.0 else { return };
        let mut s = lock(state);
        if s.root != root {
            s.kept.clear();
            s.root = root.to_path_buf();
        }
    }

    /// What reading `path` gave before, when it may be replayed.
    pub(crate) fn replay(&self, path: &Path) -> Option<Outcome> {
        let mut s = lock(self.0.as_ref()?);
        let found = s.kept.get(path).cloned()?;
        s.read.push(path.to_path_buf());
        Some(found)
    }

    /// Whether a read of `path` is kept: then a watch covers its way, on which no
    /// directory, and not the file itself, is a symlink.
    pub(crate) fn vouches(&self, path: &Path) -> bool {
        self.0.as_ref().is_some_and(|s| lock(s).kept.contains_key(path))
    }

    /// `path` was read and gave `outcome`: kept when a watch covered it before the read.
    pub(crate) fn read(&self, path: &Path, outcome: impl FnOnce() -> Outcome) {
        let Some(state) = &self.0 else { return };
        let mut s = lock(state);
        s.read.push(path.to_path_buf());
        if s.covered.contains(path) {
            s.kept.insert(path.to_path_buf(), outcome());
        }
    }

    /// The confined paths read since the last call, for the next watch to cover.
    fn take_read(&self) -> Vec<PathBuf> {
        self.0.as_ref().map(|s| std::mem::take(&mut lock(s).read)).unwrap_or_default()
    }

    /// A watch reported `changed` (a path, and everything under it): reads on its way are
    /// dropped. `None`: anything may have changed (the queue overflowed).
    fn changed(&self, changed: Option<&[PathBuf]>) {
        let Some(state) = &self.0 else { return };
        let mut s = lock(state);
        let Some(changed) = changed else {
            s.kept.clear();
            s.covered.clear();
            return;
        };
        if changed.is_empty() {
            return;
        }
        // Each change is reported by the file's watch and its directory's, a few times over.
        let mut changed: Vec<&Path> = changed.iter().map(PathBuf::as_path).collect();
        changed.sort_unstable();
        changed.dedup();
        let under = |p: &PathBuf| changed.iter().any(|c| p.starts_with(c));
        s.kept.retain(|p, _| !under(p));
        s.covered.retain(|p| !under(p));
    }

    /// A new watch covers `paths` (and the one before has ended): what no watch covers now
    /// is dropped.
    fn covered(&self, paths: impl IntoIterator<Item = PathBuf>) {
        let Some(state) = &self.0 else { return };
        let mut s = lock(state);
        s.covered = paths.into_iter().collect();
        let State { kept, covered, .. } = &mut *s;
        kept.retain(|p, _| covered.contains(p));
    }
}

/// A watch of a compile's inputs, between two compiles of `compile --watch`
/// ([`KeptReads::watch`]).
pub struct InputWatch {
    pub(crate) inputs: crate::watch::Inputs,
    /// What is watched: each path once, absolute.
    pub(crate) paths: Vec<PathBuf>,
    /// The inputs the watch before this one, alive through the compile, saw unchanged from
    /// the compile's start to this watch's, each still the file it watched (see
    /// [`crate::watch::Inputs::same_file`]): what the compile read of them is what is there.
    pub(crate) unchanged: HashSet<PathBuf>,
}

impl KeptReads {
    /// A compile begins: what `watch` (the one since the last compile, kept alive through
    /// this one) reported changed is dropped.
    pub fn compiling(&self, watch: Option<&mut InputWatch>) {
        if let Some(w) = watch {
            self.changed(w.inputs.take_changes().as_deref());
        }
    }

    /// A compile has ended: watches `inputs` and every input file it read, then ends
    /// `ended` (what it reported up to now is dropped), so every kept read is covered
    /// from before it was read on. `None` when no watch can be made.
    pub fn watch(&self, inputs: impl IntoIterator<Item = PathBuf>, ended: Option<InputWatch>) -> Option<InputWatch> {
        let mut seen = HashSet::new();
        let paths: Vec<PathBuf> = inputs
            .into_iter()
            .chain(self.take_read())
            .map(|p| std::path::absolute(&p).unwrap_or(p))
            .filter(|p| seen.insert(p.clone()))
            .collect();
        let inputs = crate::watch::Inputs::new(paths.iter().cloned())?;
        let mut unchanged = HashSet::new();
        if let Some(mut ended) = ended {
            let changes = ended.inputs.take_changes();
            self.changed(changes.as_deref());
            if let Some(changes) = changes {
                let covered: HashSet<&PathBuf> = ended.inputs.covered().iter().collect();
                let seen = |p: &PathBuf| changes.iter().any(|c| p.starts_with(c));
                unchanged.extend(paths.iter().filter(|p| covered.contains(p) && !seen(p) && ended.inputs.same_file(p)).cloned());
            }
        }
        self.covered(inputs.covered().iter().cloned());
        Some(InputWatch { inputs, paths, unchanged })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Outcome {
        Outcome { text: Some(t.to_string()), sha256: Some(crate::digest::sha256_hex(t.as_bytes())), stamp: None }
    }

    #[test]
    fn a_read_is_replayed_only_while_a_watch_that_began_before_it_covers_it() {
        let kept = KeptReads::kept();
        let (a, b) = (PathBuf::from("/r/svc/a.json"), PathBuf::from("/r/svc/b.json"));
        kept.confined_to(Path::new("/r"));
        kept.read(&a, || text("a"));
        assert_eq!(kept.replay(&a), None, "read before any watch covered it");
        kept.covered([a.clone(), b.clone()]);
        kept.read(&a, || text("a"));
        kept.read(&b, Outcome::default);
        assert_eq!(kept.replay(&a), Some(text("a")));
        assert_eq!(kept.replay(&b), Some(Outcome::default()), "an absence is kept too");
        assert_eq!(kept.take_read(), vec![a.clone(), a.clone(), b.clone(), a.clone(), b.clone()]);
        kept.changed(Some(&[PathBuf::from("/r/pod.yml")]));
        assert!(kept.replay(&a).is_some(), "a change elsewhere");
        kept.changed(Some(&[PathBuf::from("/r/svc")]));
        assert_eq!(kept.replay(&a), None, "a change on its way");
        kept.read(&a, || text("a2"));
        assert_eq!(kept.replay(&a), None, "no longer covered: the watch saw its way change");
        kept.covered([a.clone(), b.clone()]);
        kept.read(&a, || text("a2"));
        kept.read(&b, || text("b"));
        kept.covered([a.clone()]);
        assert_eq!((kept.replay(&a), kept.replay(&b)), (Some(text("a2")), None), "b is no longer watched");
        kept.confined_to(Path::new("/r"));
        assert!(kept.replay(&a).is_some(), "the same root");
        kept.confined_to(Path::new("/r/svc"));
        assert_eq!(kept.replay(&a), None, "read within another root");
        kept.read(&a, || text("a2"));
        kept.changed(None);
        assert_eq!(kept.replay(&a), None, "an overflowed queue drops everything");
        let none = KeptReads::default();
        none.covered([a.clone()]);
        none.read(&a, || text("a"));
        assert_eq!((none.replay(&a), none.take_read()), (None, vec![]), "the default keeps nothing");
    }

    /// The watch that ran through a compile vouches for an input only when it saw nothing
    /// of it from the compile's start on and the file there is still the one it watched.
    #[test]
    fn an_input_is_unchanged_through_a_compile_only_as_its_watch_saw_it() {
        let dir = tempfile::tempdir().unwrap();
        let (pod, other) = (dir.path().join("claw-pod.yml"), dir.path().join("d.json"));
        std::fs::write(&pod, "a").unwrap();
        std::fs::write(&other, "a").unwrap();
        let kept = KeptReads::kept();
        let mut watch = kept.watch([pod.clone(), other.clone()], None).unwrap();
        assert!(watch.unchanged.is_empty(), "no watch ran through the first compile");
        // Saved in place before the compile began: the compile read it as it is now.
        std::fs::write(&pod, "b").unwrap();
        kept.compiling(Some(&mut watch));
        let mut next = kept.watch([pod.clone(), other.clone()], Some(watch)).unwrap();
        assert_eq!(next.unchanged, HashSet::from([pod.clone(), other.clone()]));
        // Written while the compile ran.
        kept.compiling(Some(&mut next));
        std::fs::write(&pod, "c").unwrap();
        let mut then = kept.watch([pod.clone(), other.clone()], Some(next)).unwrap();
        assert_eq!(then.unchanged, HashSet::from([other.clone()]), "a write during the compile");
        // Replaced by rename before the compile began: another file than the one watched,
        // whose writes through other names the watch would not have seen.
        std::fs::write(dir.path().join("new"), "d").unwrap();
        std::fs::rename(dir.path().join("new"), &pod).unwrap();
        kept.compiling(Some(&mut then));
        let last = kept.watch([pod.clone(), other.clone()], Some(then)).unwrap();
        assert_eq!(last.unchanged, HashSet::from([other]), "the file replaced");
    }
}
