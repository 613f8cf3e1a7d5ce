//! The render memo: what the previous compile rendered for each agent service (its render
//! key, see `project::reuse`, and its files by path, hash and mode), kept beside the stat
//! record, so a recompile renders only the services whose key changed. A service whose
//! key is unchanged is taken from the tree as it is, when every one of its files is still
//! the one the previous lock records and the stat record vouches for it (see
//! [`super::known`]); else it is rendered as if there were no memo.
//!
//! It is trusted as the stat record is: it lives in the user cache
//! (`<cache>/check/v1/<SHA-256 of the canonical --out path>.memo`), never in the tree or
//! the repository; it is bound to one lock by that lock's SHA-256 (a memo for another lock
//! is ignored), checksummed, bounded in size and decoded without trusting a length. Only
//! a write uses it: `--check` always renders, so a committed tree is always compared with
//! what the inputs make now.

use crate::artifact::{Memo, Recorded};
use std::io::Read;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 16] = b"clawc-memo-1\n\0\0\0";
/// The largest memo read (a 30,000-agent pod's is about 7 MB).
const MAX_SIZE: u64 = crate::disk::MAX_BOOKKEEPING;

/// Where the memo of the tree whose stat record is at `record` is kept.
pub(crate) fn path(record: &Path) -> PathBuf {
    let mut p = record.as_os_str().to_owned();
    p.push(".memo");
    PathBuf::from(p)
}

/// The memo at `path` if it is whole and was stored with the lock whose digest is `lock`.
pub(crate) fn load(path: &Path, lock: &[u8; 32]) -> Option<Memo> {
    let file = crate::disk::open(path, false).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_SIZE {
        return None;
    }
    let mut b = Vec::with_capacity(usize::try_from(meta.len()).ok()?);
    (&file).take(MAX_SIZE + 1).read_to_end(&mut b).ok()?;
    decode(&b, lock)
}

/// Writes `memo`, bound to the lock whose digest is `lock`, to `path` atomically (a
/// temporary file renamed over it). Failures are ignored: the memo only ever saves work.
pub(crate) fn store(path: &Path, lock: &[u8; 32], memo: &Memo) {
    let _ = try_store(path, &encode(lock, memo));
}

fn try_store(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = path.parent().ok_or_else(|| std::io::Error::other("no parent"))?;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Magic, the lock's digest, the count of services; per service its name, key and files
/// (path, digest, mode); a CRC-32 of everything before it.
fn encode(lock: &[u8; 32], memo: &Memo) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(lock);
    put_len(&mut b, memo.0.len());
    for (service, (key, files)) in &memo.0 {
        put_str(&mut b, service);
        b.extend_from_slice(key);
        put_len(&mut b, files.len());
        for f in files {
            put_str(&mut b, &f.path);
            b.extend_from_slice(&f.digest);
            b.extend_from_slice(&f.mode.to_le_bytes());
        }
    }
    let sum = crc32fast::hash(&b);
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

fn put_len(b: &mut Vec<u8>, n: usize) {
    b.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_len(b, s.len());
    b.extend_from_slice(s.as_bytes());
}

fn decode(b: &[u8], lock: &[u8; 32]) -> Option<Memo> {
    let (body, sum) = b.split_at_checked(b.len().checked_sub(4)?)?;
    if crc32fast::hash(body).to_le_bytes() != *sum {
        return None;
    }
    let mut r = Reader(body);
    if r.take(16)? != MAGIC || r.take(32)? != lock {
        return None;
    }
    let mut memo = Memo::default();
    for _ in 0..r.len()? {
        let service = r.string()?;
        let key: [u8; 32] = r.take(32)?.try_into().ok()?;
        let count = r.len()?;
        // Every file takes at least 40 bytes: a count cannot ask for more than is there.
        let mut files = Vec::with_capacity(count.min(r.0.len() / 40));
        for _ in 0..count {
            let path = r.string()?;
            let digest = r.take(32)?.try_into().ok()?;
            let mode = u32::from_le_bytes(r.take(4)?.try_into().ok()?);
            files.push(Recorded { path, digest, mode });
        }
        memo.0.insert(service, (key, files));
    }
    r.0.is_empty().then_some(memo)
}

/// The unread rest of a memo.
struct Reader<'b>(&'b [u8]);

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Option<&'b [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn len(&mut self) -> Option<usize> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize)
    }

    fn string(&mut self) -> Option<String> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memo() -> Memo {
        let file = |p: &str, d: u8, mode: u32| Recorded { path: p.to_string(), digest: [d; 32], mode };
        let mut m = Memo::default();
        m.0.insert("a".into(), ([1; 32], vec![file("context/a/CLAWDAPUS.md", 2, 0o644), file("report/a.json", 3, 0o644)]));
        m.0.insert("b".into(), ([4; 32], vec![]));
        m
    }

    #[test]
    fn a_memo_decodes_as_stored_and_only_for_its_lock() {
        let b = encode(&[9; 32], &memo());
        assert_eq!(decode(&b, &[9; 32]), Some(memo()));
        assert_eq!(decode(&b, &[8; 32]), None);
    }

    #[test]
    fn a_torn_or_garbled_memo_is_ignored() {
        let b = encode(&[9; 32], &memo());
        for n in 0..b.len() {
            assert_eq!(decode(&b[..n], &[9; 32]), None, "cut at {n}");
        }
        for i in 0..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 0x40;
            assert_eq!(decode(&bad, &[9; 32]), None, "byte {i} flipped");
        }
    }

    #[test]
    fn a_count_larger_than_the_memo_allocates_nothing_and_fails() {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[9; 32]);
        b.extend_from_slice(&1u32.to_le_bytes());
        put_str(&mut b, "a");
        b.extend_from_slice(&[1; 32]);
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        let sum = crc32fast::hash(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(decode(&b, &[9; 32]), None);
    }
}
