//! The record of every input file a compile looked at: read (with its SHA-256) or probed
//! and found missing. The lock file is built from it, and `--check` replays it to decide
//! from hashes alone whether anything changed.

use super::fs::{self, ReadError};
use super::kept::Outcome;
use crate::digest::sha256_hex;
use crate::disk::{Stamp, Time};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InputEntry {
    /// What the file is to clawc: `pod`, `descriptor`, `dockerfile`, `snapshot`, `skill`,
    /// `image` (a file read out of an image, named `<image>:<path>`).
    pub role: &'static str,
    /// SHA-256 of the bytes, `None` when the file was probed and is absent.
    pub sha256: Option<String>,
    /// The `fstat` of the file as it was read, when it had not changed since the log was
    /// begun (see [`InputLog::new`]): a stat record may then vouch for those bytes by it,
    /// so the first `--check` after a compile reads no input again. Not in the lock.
    pub stamp: Option<Stamp>,
}

/// Shared by the threads that describe services at once; the entries are a map by name,
/// so the order of their reads does not show.
#[derive(Debug, Default)]
pub(crate) struct InputLog {
    entries: Mutex<BTreeMap<String, InputEntry>>,
    /// Where every input named by the pod, a descriptor or a label must resolve.
    root: Option<fs::InputRoot>,
    /// When the log was begun, before any of its reads ([`crate::disk::now`]).
    begun: Time,
    /// Reads an earlier compile under the same watch made, replayed while unchanged.
    kept: super::kept::KeptReads,
}

impl InputLog {
    /// A log whose reads are confined to `root`, begun now: a file changed at or after
    /// this time (in the clock's tick) is read without a stamp, since a change made while
    /// or just after it was read might not show in its stamp ("racy git").
    pub(crate) fn new(root: fs::InputRoot) -> Self {
        InputLog { entries: Mutex::default(), root: Some(root), begun: crate::disk::now(), kept: super::kept::KeptReads::default() }
    }

    /// This log, replaying what `kept` holds and keeping what it reads into it.
    pub(crate) fn keeping(self, kept: &super::kept::KeptReads) -> Self {
        if let Some(root) = &self.root {
            kept.confined_to(root.path());
        }
        InputLog { kept: kept.clone(), ..self }
    }

    /// Reads `path` (called `name`, pod-relative), confined to the input root, and records
    /// what was found.
    pub(crate) fn read(&self, path: &Path, name: &str, role: &'static str) -> Result<String, ReadError> {
        self.read_in(self.root.as_ref(), path, name, role)
    }

    /// Reads a path the operator gave on the command line (`--descriptor`): anywhere, but
    /// still only a regular file within the size limit.
    pub(crate) fn read_trusted(&self, path: &Path, name: &str, role: &'static str) -> Result<String, ReadError> {
        self.read_in(None, path, name, role)
    }

    fn read_in(&self, root: Option<&fs::InputRoot>, path: &Path, name: &str, role: &'static str) -> Result<String, ReadError> {
        // Only reads confined to the root are kept: an operator's path may be anywhere.
        let kept = root.is_some().then_some(&self.kept);
        let read = match kept.and_then(|k| k.replay(path)) {
            Some(replayed) => replayed,
            None => {
                let read = match fs::read_text_stat(root, path, name, fs::MAX_INPUT_BYTES) {
                    Ok((text, meta)) => Outcome {
                        sha256: Some(sha256_hex(text.as_bytes())),
                        stamp: meta.map(|m| Stamp::of(&m)).filter(|s| !s.racy(self.begun)),
                        text: Some(text),
                    },
                    Err(ReadError::Missing) => Outcome::default(),
                    Err(e) => return Err(e),
                };
                if let Some(kept) = kept {
                    kept.read(path, || read.clone());
                }
                read
            }
        };
        // A replayed stamp is judged against this log's beginning too.
        let Outcome { text, sha256, stamp } = read;
        let stamp = stamp.filter(|s| !s.racy(self.begun));
        self.locked().insert(name.to_string(), InputEntry { role, sha256, stamp });
        text.ok_or(ReadError::Missing)
    }

    /// [`fs::contained`], without resolving symlinks when a watch vouches that nothing on
    /// the way to the file is one (a read of it is kept: see [`super::kept`]).
    pub(crate) fn contained(&self, root: &Path, untrusted: &str, boundary: fs::Boundary) -> Result<std::path::PathBuf, String> {
        let joined = fs::joined(root, untrusted, boundary)?;
        if self.kept.vouches(&joined) { Ok(joined) } else { fs::contained(root, untrusted, boundary) }
    }

    /// Whether `path` (absolute) resolves inside the input root (see [`fs::InputRoot::holds`]).
    pub(crate) fn holds(&self, path: &Path) -> bool {
        self.root.as_ref().is_none_or(|r| r.holds(path))
    }

    /// Records an input that is not a file on disk (a file read out of an image).
    pub(crate) fn record(&self, name: &str, role: &'static str, bytes: Option<&[u8]>) {
        self.locked().insert(name.to_string(), InputEntry { role, sha256: bytes.map(sha256_hex), stamp: None });
    }

    pub(crate) fn entries(&self) -> BTreeMap<String, InputEntry> {
        self.locked().clone()
    }

    /// The entries, whatever a thread that panicked while holding them left (an insert is
    /// whole or not done).
    fn locked(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, InputEntry>> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file read is stamped as it was read when it last changed before the log was
    /// begun, and not stamped when it changed at or after that (it could change again
    /// within the same clock tick without its stamp showing it); a file not found has none.
    #[test]
    fn an_input_is_stamped_only_when_it_changed_before_the_log_began() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("claw-pod.yml");
        std::fs::write(&file, "services: {}\n").unwrap();
        let root = || fs::InputRoot::new(dir.path()).unwrap();
        let read = |log: &InputLog| {
            assert!(log.read(&file, "claw-pod.yml", "pod").is_ok());
            assert!(matches!(log.read(&dir.path().join("absent"), "absent", "dockerfile"), Err(ReadError::Missing)));
            log.entries()
        };
        let begun_after = InputLog { begun: (i64::MAX, 0), ..InputLog::new(root()) };
        let now = read(&InputLog::new(root()));
        assert_eq!(now["claw-pod.yml"].sha256, Some(sha256_hex(b"services: {}\n")));
        let begun_before = InputLog { begun: (0, 0), ..InputLog::new(root()) };
        assert_eq!(read(&begun_after)["claw-pod.yml"].stamp, Some(Stamp::of(&std::fs::metadata(&file).unwrap())));
        assert_eq!(read(&begun_before)["claw-pod.yml"].stamp, None, "changed at or after the log began");
        assert_eq!(read(&begun_after)["absent"].stamp, None);
        assert_eq!(read(&begun_after)["absent"].sha256, None);
    }
}
