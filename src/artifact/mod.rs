//! The compiled tree ([`ArtifactSet`] in memory, or the files a compile streams into a
//! sink, `output::sink`) and its byte-exact JSON encoding: what projection produces and the output layer writes. A leaf
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
        Artifact::mode_for(self.secret, self.executable)
    }

    /// The permission bits of a file that is `secret` (holds a literal token) or
    /// `executable`, as [`Artifact::mode`] gives them.
    pub(crate) fn mode_for(secret: bool, executable: bool) -> u32 {
        match (secret, executable) {
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

/// A file on its way to a sink (`output::sink`), with the hash the lock records for it.
#[derive(Clone, Debug)]
pub struct Output {
    /// Shared with the lock's list of outputs and the write's journal.
    pub path: Arc<str>,
    pub artifact: Artifact,
    /// Hex SHA-256 of its bytes (with inline tokens masked: see `lock`).
    pub sha256: String,
}

/// A file too long to hold (`report.json` of a pod of many agent ids): its digest and
/// length, and how to make its bytes, the same bytes each time they are made. It holds no
/// token (it was scanned as it was first made), so it is written with mode 0644.
#[derive(Clone, Copy)]
pub struct Streamed<'m> {
    pub digest: [u8; 32],
    pub len: u64,
    pub write: Maker<'m>,
}

/// What makes a file's bytes into a writer, the same bytes each time it is called.
pub(crate) type Maker<'m> = &'m dyn Fn(&mut dyn std::io::Write) -> std::io::Result<()>;

impl Streamed<'_> {
    /// Its bytes, made into memory.
    pub fn bytes(&self) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(usize::try_from(self.len).unwrap_or(0));
        (self.write)(&mut bytes)?;
        Ok(bytes)
    }

    /// Makes its bytes into `w` through a buffer, and fails unless they are the bytes it
    /// was first made as (same length, same digest).
    pub(crate) fn write_checked(&self, w: impl std::io::Write) -> std::io::Result<()> {
        let mut through = std::io::BufWriter::with_capacity(STREAMED_BUFFER, crate::digest::Hashing::new(w));
        (self.write)(&mut through)?;
        let (digest, len) = through.into_inner().map_err(std::io::IntoInnerError::into_error)?.finish();
        if (digest, len) != (self.digest, self.len) {
            return Err(std::io::Error::other("a file made a second time came out other than the first time"));
        }
        Ok(())
    }
}

/// The buffer a [`Streamed`] file is made through: its maker writes small pieces.
pub(crate) const STREAMED_BUFFER: usize = 64 * 1024;

impl std::fmt::Debug for Streamed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streamed").field("digest", &hex::encode(self.digest)).field("len", &self.len).finish()
    }
}

/// A file a compile wrote, as a later one may take it from the tree without rendering it
/// again: its path and mode. Its hash is the lock's (the memo is bound to one lock), not
/// kept a second time: at 30,000 agent ids that was 3 MB.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// Shared with the lock's list of outputs (`lock::Listed`).
    pub path: Arc<str>,
    /// Its permission bits (see [`Artifact::mode`]).
    pub mode: u32,
}

/// A service's files taken from the tree ([`crate::output::sink::Sink::reuse`]): as the
/// memo has them, and the SHA-256 the previous lock records for each, in the same order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taken {
    pub files: Vec<Recorded>,
    pub digests: Vec<[u8; 32]>,
}

/// What a compile rendered for each agent service: the render key it was rendered from
/// (`project::reuse`) and its files. Kept beside the tree so the next compile renders only
/// the services whose key changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Memo(pub BTreeMap<String, ([u8; 32], Vec<Recorded>)>);

#[cfg(test)]
mod tests {
    use super::*;

    /// A streamed file is written only as the bytes it was first made as: made otherwise
    /// the second time (longer, shorter, or the same length with other bytes), it is an
    /// error, not a file.
    #[test]
    fn a_streamed_file_made_otherwise_the_second_time_is_refused() {
        let first = b"{\n  \"agents\": []\n}\n";
        let digest = crate::digest::sha256(first);
        for (made, ok) in [
            (&first[..], true),
            (&b"{\n  \"agents\": [1]\n}\n"[..], false),
            (&first[1..], false),
            (&b"{\n  \"agents\": {}\n}\n"[..], false),
        ] {
            let write = |w: &mut dyn std::io::Write| w.write_all(made);
            let file = Streamed { digest, len: first.len() as u64, write: &write };
            let mut out = Vec::new();
            assert_eq!(file.write_checked(&mut out).is_ok(), ok, "{:?}", String::from_utf8_lossy(made));
            assert_eq!(out, made, "written through as made");
            assert_eq!(file.bytes().unwrap(), made);
        }
    }
}
