//! Descriptors decoded by an earlier compile of the same pod, kept in the user cache
//! (`<cache>/describe/v1/<SHA-256 of the pod's canonical path>`), so a compile after an
//! edit of the pod decodes only the descriptors whose text changed. Decoding a big pod's
//! descriptors (parsing, Clawdapus' checks, the meta-validation of every `inputSchema`)
//! was a fifth of a one-shot compile of a one-agent edit.
//!
//! An entry is keyed by the binding digest (BLAKE3: `digest::binding`) of the clawc
//! build's identity and the descriptor's text, and holds what decoding that text gives:
//! only a text that decoded with no diagnostic at all is kept, so a hit returns exactly
//! what decoding would (no diagnostic, whose place would depend on the file, is ever
//! kept). Its schemas stay text until looked at ([`super::FreeForm`]); its digest (what
//! the render keys feed) is kept with it.
//!
//! It is trusted as the stat record is: it lives in the user cache, never in the
//! repository under review (a cache directory there is neither read nor written); it is
//! checksummed, bounded in size, decoded without trusting a length, written atomically,
//! and holds only what the last compile of the pod used. Anything else is a miss.

use super::{Descriptor, SharedDescriptor};
use crate::diag::Diagnostic;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

const MAGIC: &[u8; 16] = b"clawc-described1";
/// The header: the magic, the build's digest, the count of entries.
const HEADER: usize = 16 + 32 + 4;
/// Before each entry's JSON: its key, its digest, its length.
const ENTRY_HEAD: usize = 32 + 32 + 4;

/// What decoding one text gave.
type Outcome = (Option<Arc<SharedDescriptor>>, Vec<Diagnostic>);

/// The cache of one compile: what the file held, and what this compile used.
pub(crate) struct Cache {
    at: PathBuf,
    /// The SHA-256 of the running clawc's identity (another build may decode otherwise).
    build: [u8; 32],
    /// The file's bytes, and where each entry's digest and JSON are in them.
    stored: Vec<u8>,
    found: Entries,
    used: Mutex<Used>,
}

/// Where each entry of the file is, by its key.
type Entries = BTreeMap<[u8; 32], Found>;

#[derive(Clone, Copy)]
struct Found {
    digest: [u8; 32],
    at: usize,
    end: usize,
}

#[derive(Default)]
struct Used {
    /// Each entry this compile decoded anew: its digest and JSON.
    fresh: BTreeMap<[u8; 32], ([u8; 32], Vec<u8>)>,
    /// Each entry this compile took from the file.
    taken: BTreeMap<[u8; 32], Found>,
}

impl Cache {
    /// The cache kept in the file `at`, for the clawc whose identity has the SHA-256
    /// `build`. An absent or unusable file is an empty cache.
    pub(crate) fn open(at: PathBuf, build: [u8; 32]) -> Cache {
        let (stored, found) = load(&at, &build).unwrap_or_default();
        Cache { at, build, stored, found, used: Mutex::default() }
    }

    /// What decoding `text` gives: the kept outcome, or `decode()`'s, kept when it has no
    /// diagnostic.
    pub(crate) fn get_or(&self, text: &str, decode: impl FnOnce() -> Outcome) -> Outcome {
        let key = self.key(text);
        if let Some(found) = self.found.get(&key).copied()
            && let Ok(descriptor) = serde_json::from_slice::<Descriptor>(&self.stored[found.at..found.end])
        {
            self.used().taken.insert(key, found);
            return (Some(Arc::new(SharedDescriptor::with_digest(descriptor, found.digest))), Vec::new());
        }
        let (descriptor, diags) = decode();
        if let Some(d) = descriptor.as_ref().filter(|_| diags.is_empty())
            && let Ok(json) = serde_json::to_vec::<Descriptor>(d)
        {
            let digest = *d.digest();
            self.used().fresh.insert(key, (digest, json));
        }
        (descriptor, diags)
    }

    fn key(&self, text: &str) -> [u8; 32] {
        crate::digest::binding_of(&[&self.build, text.as_bytes()])
    }

    fn used(&self) -> std::sync::MutexGuard<'_, Used> {
        self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes what this compile used for the next, unless it is what the file holds.
    pub(crate) fn store(self) {
        let used = self.used.into_inner().unwrap_or_else(PoisonError::into_inner);
        if used.fresh.is_empty() && used.taken.len() == self.found.len() {
            return;
        }
        let mut entries: BTreeMap<[u8; 32], ([u8; 32], &[u8])> =
            used.taken.iter().map(|(k, f)| (*k, (f.digest, &self.stored[f.at..f.end]))).collect();
        entries.extend(used.fresh.iter().map(|(k, (digest, json))| (*k, (*digest, json.as_slice()))));
        let mut bytes = Vec::with_capacity(HEADER + entries.values().map(|(_, j)| ENTRY_HEAD + j.len()).sum::<usize>() + 4);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&self.build);
        bytes.extend_from_slice(&len32(entries.len()));
        for (key, (digest, json)) in &entries {
            bytes.extend_from_slice(key);
            bytes.extend_from_slice(digest);
            bytes.extend_from_slice(&len32(json.len()));
            bytes.extend_from_slice(json);
        }
        crate::disk::store_sealed(&self.at, &bytes);
    }
}

fn len32(n: usize) -> [u8; 4] {
    u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes()
}

/// The file at `at` and its entries, if it is whole and for `build`.
fn load(at: &Path, build: &[u8; 32]) -> Option<(Vec<u8>, Entries)> {
    let bytes = crate::disk::load_sealed(at, &[&MAGIC[..], build].concat())?;
    let body = &bytes[..];
    let count = u32::from_le_bytes(body.get(48..HEADER)?.try_into().ok()?);
    let mut found = BTreeMap::new();
    let mut at = HEADER;
    for _ in 0..count {
        let head = body.get(at..at.checked_add(ENTRY_HEAD)?)?;
        let len = u32::from_le_bytes(head[64..].try_into().ok()?) as usize;
        let end = (at + ENTRY_HEAD).checked_add(len).filter(|&e| e <= body.len())?;
        let entry = Found { digest: head[32..64].try_into().ok()?, at: at + ENTRY_HEAD, end };
        found.insert(head[..32].try_into().ok()?, entry);
        at = end;
    }
    (at == body.len()).then_some((bytes, found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sourcemap::SourceMap;

    const TEXT: &str = r#"{"version":2,"description":"d","mcp":{"path":"/mcp"},"auth":{"type":"bearer","env":"T"},
        "tools":[{"name":"a","description":"x","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},
        "annotations":{"readOnlyHint":true},"outputSchema":{"type":"object"}}]}"#;

    fn decode(text: &str) -> Outcome {
        let mut sources = SourceMap::default();
        let id = sources.add("d.json", text);
        let (d, ds) = crate::describe::decode(id, sources.get(id));
        (d.map(Arc::from), ds)
    }

    #[test]
    fn a_kept_descriptor_is_the_decoded_one_and_a_damaged_file_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let pod = dir.path().join("claw-pod.yml");
        std::fs::write(&pod, "").unwrap();
        let cache_dir = dir.path().join("cache");
        let at = crate::disk::cache_path(&cache_dir, &pod, &[]).unwrap();
        let open = |build: &[u8]| Cache::open(at.clone(), crate::digest::sha256(build));
        let calls = std::cell::Cell::new(0);
        let counted = |text: &str| {
            calls.set(calls.get() + 1);
            decode(text)
        };
        let bad = r#"{"version":3}"#;
        let first = open(b"one");
        let decoded = first.get_or(TEXT, || counted(TEXT));
        assert!(!first.get_or(bad, || counted(bad)).1.is_empty());
        first.store();
        let second = open(b"one");
        let kept = second.get_or(TEXT, || counted(TEXT));
        assert_eq!(calls.get(), 2, "taken from the file");
        let (a, b) = (decoded.0.unwrap(), kept.0.unwrap());
        assert_eq!(**a, **b);
        assert_eq!(crate::digest::of_hash(&*a), crate::digest::of_hash(&*b), "the kept digest is the content's");
        assert_eq!(crate::digest::of_hash(&SharedDescriptor::new((*b).clone().into_inner())), crate::digest::of_hash(&*a));
        assert!(kept.1.is_empty());
        // A text with diagnostics is never kept: decoded again, diagnostics and all.
        assert!(!second.get_or(bad, || counted(bad)).1.is_empty());
        assert_eq!(calls.get(), 3);
        second.store();
        // Another build keeps nothing of this one's.
        open(b"two").get_or(TEXT, || counted(TEXT));
        assert_eq!(calls.get(), 4);
        // Every byte flipped, and the file cut at every length: a miss, never a panic.
        let whole = std::fs::read(&at).unwrap();
        for i in 0..whole.len() {
            let mut b = whole.clone();
            b[i] ^= 0x20;
            std::fs::write(&at, &b).unwrap();
            assert!(open(b"one").found.is_empty(), "byte {i} flipped");
            std::fs::write(&at, &whole[..i]).unwrap();
            assert!(open(b"one").found.is_empty(), "cut at {i}");
        }
        // A symlink to a whole file is not followed.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&at, &whole).unwrap();
        std::fs::rename(&at, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &at).unwrap();
        assert!(open(b"one").found.is_empty(), "read through a symlink");
        // A cache directory in the repository under review is neither read nor written.
        assert!(crate::disk::cache_path(&cache_dir, &pod, &[dir.path()]).is_none());
    }
}
