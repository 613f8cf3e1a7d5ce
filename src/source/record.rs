//! The record of every input file a compile looked at: read (with its SHA-256) or probed
//! and found missing. The lock file is built from it, and `--check` replays it to decide
//! from hashes alone whether anything changed.

use super::fs::{self, ReadError};
use crate::digest::sha256_hex;
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
}

/// Shared by the threads that describe services at once; the entries are a map by name,
/// so the order of their reads does not show.
#[derive(Debug, Default)]
pub(crate) struct InputLog {
    entries: Mutex<BTreeMap<String, InputEntry>>,
    /// Where every input named by the pod, a descriptor or a label must resolve.
    root: Option<fs::InputRoot>,
}

impl InputLog {
    /// A log whose reads are confined to `root`.
    pub(crate) fn new(root: fs::InputRoot) -> Self {
        InputLog { entries: Mutex::default(), root: Some(root) }
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
        let r = fs::read_text(root, path, name);
        let sha256 = match &r {
            Ok(text) => Some(sha256_hex(text.as_bytes())),
            Err(ReadError::Missing) => None,
            Err(_) => return r,
        };
        self.locked().insert(name.to_string(), InputEntry { role, sha256 });
        r
    }

    /// Whether `path` (absolute) resolves inside the input root (see [`fs::InputRoot::holds`]).
    pub(crate) fn holds(&self, path: &Path) -> bool {
        self.root.as_ref().is_none_or(|r| r.holds(path))
    }

    /// Records an input that is not a file on disk (a file read out of an image).
    pub(crate) fn record(&self, name: &str, role: &'static str, bytes: Option<&[u8]>) {
        self.locked().insert(name.to_string(), InputEntry { role, sha256: bytes.map(sha256_hex) });
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
