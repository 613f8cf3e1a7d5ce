//! The compiled tree ([`ArtifactSet`] in memory, or a [`Sink`] it streams into) and its
//! byte-exact JSON encoding: what projection produces and the output layer writes. A leaf
//! every layer may use.

pub(crate) mod json;

use std::collections::BTreeMap;
use std::sync::Arc;

/// One output file. Its bytes are shared: replicas of one service get one rendering of
/// the files that do not depend on the agent id, and every pass that reads the tree
/// (leak scan, lock hashes) reads each distinct rendering once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    pub bytes: Arc<[u8]>,
    /// Holds a literal secret: written with mode 0600.
    pub secret: bool,
    /// A skill folder's script that was executable: written with mode 0755 (it never
    /// holds a literal token: clawc copies it, and the leak scan refuses one in it).
    pub executable: bool,
}

/// Every output file by `/`-separated path relative to the output directory. A BTreeMap,
/// so iteration (and everything derived from it) is sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArtifactSet(pub BTreeMap<String, Artifact>);

impl Artifact {
    /// Which rendering this is (shared bytes and mode): files that share one are the same
    /// file, hashed and scanned once.
    pub fn rendering(&self) -> (usize, u32) {
        (self.bytes.as_ptr() as usize, self.mode())
    }

    /// The file's permission bits in the tree.
    pub fn mode(&self) -> u32 {
        match (self.secret, self.executable) {
            (true, _) => 0o600,
            (false, true) => 0o755,
            (false, false) => 0o644,
        }
    }
}

impl ArtifactSet {
    pub fn insert(&mut self, path: impl Into<String>, bytes: impl Into<Arc<[u8]>>) {
        self.0.insert(path.into(), Artifact { bytes: bytes.into(), secret: false, executable: false });
    }

    /// A copied skill file, executable when its source was.
    pub fn insert_copy(&mut self, path: impl Into<String>, bytes: impl Into<Arc<[u8]>>, executable: bool) {
        self.0.insert(path.into(), Artifact { bytes: bytes.into(), secret: false, executable });
    }

    pub fn insert_secret(&mut self, path: impl Into<String>, bytes: impl Into<Arc<[u8]>>, secret: bool) {
        self.0.insert(path.into(), Artifact { bytes: bytes.into(), secret, executable: false });
    }
}

/// Each distinct rendering among `files` once (by identity, not content), with the first
/// of its paths: files that share one are the same file, hashed and scanned once.
pub(crate) fn distinct<'a>(files: impl IntoIterator<Item = &'a (String, Artifact)>) -> impl Iterator<Item = &'a (String, Artifact)> {
    let mut seen = std::collections::HashSet::new();
    files.into_iter().filter(move |(_, a)| seen.insert(a.rendering()))
}

/// A file on its way to a [`Sink`], with the hash the lock records for it.
#[derive(Clone, Debug)]
pub struct Output {
    pub path: String,
    pub artifact: Artifact,
    /// Hex SHA-256 of its bytes (with inline tokens masked: see `lock`).
    pub sha256: String,
}

/// A file known by its hash, not its bytes: what a compile wrote, as a later one may take
/// it from the tree without rendering it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub path: String,
    /// SHA-256 of its bytes, as the lock records it.
    pub digest: [u8; 32],
    /// Its permission bits (see [`Artifact::mode`]).
    pub mode: u32,
}

/// What a compile rendered for each agent service: the render key it was rendered from
/// (`project::reuse`) and its files. Kept beside the tree so the next compile renders only
/// the services whose key changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Memo(pub BTreeMap<String, ([u8; 32], Vec<Recorded>)>);

/// Where the compile puts the tree, a batch of files at a time, `clawc.lock` last: a
/// batch's bytes may be dropped once taken, so a compile that writes as it goes holds one
/// batch, not the tree. The batches are the same and come in the same order whatever
/// the thread count.
pub trait Sink {
    /// Takes one batch. An error stops the sink: the compile goes on (its own errors come
    /// first) but puts nothing more.
    fn put(&mut self, batch: Vec<Output>) -> Result<(), crate::diag::Diagnostic>;

    /// Whether the sink may hold files a compile need not render ([`Sink::reuse`]); when
    /// not, the compile does not compute render keys.
    fn reuses(&self) -> bool {
        false
    }

    /// For each of `wanted` (an agent service and the render key of its inputs): its files
    /// as the previous compile rendered them from inputs with that key, when the sink
    /// holds them still unchanged (then they count as put, and the compile does not render
    /// the service); `None` otherwise.
    fn reuse(&mut self, wanted: &[(&str, &[u8; 32])]) -> Vec<Option<Vec<Recorded>>> {
        vec![None; wanted.len()]
    }

    /// What this compile rendered, for the next one's [`Sink::reuse`]: handed over before
    /// the lock is put.
    fn remember(&mut self, _memo: Memo) {}

    /// The digest of the descriptors this compile read ([`crate::lock::described_digest`]),
    /// told as soon as they are read: a sink looking at the previous tree ahead of the
    /// render keys stops when it is not the previous compile's, since then next to no key
    /// is unchanged.
    fn described(&mut self, _digest: [u8; 32]) {}
}

/// The whole tree in memory (the library API, `--check`, the golden tests).
impl Sink for ArtifactSet {
    fn put(&mut self, batch: Vec<Output>) -> Result<(), crate::diag::Diagnostic> {
        self.0.extend(batch.into_iter().map(|o| (o.path, o.artifact)));
        Ok(())
    }
}

/// A sink that keeps nothing: for the commands that compile only to question what was
/// resolved (`explain`, `who-can`, `report`), whose peak then holds a batch, not the tree.
pub(crate) struct Discard;

impl Sink for Discard {
    fn put(&mut self, _: Vec<Output>) -> Result<(), crate::diag::Diagnostic> {
        Ok(())
    }
}
