//! The render memo: what the previous compile rendered for each agent service (its render
//! key, see `project::reuse`, and its files by path and mode; their hashes are the lock's
//! it is bound to), kept beside the stat
//! record, so a recompile renders only the services whose key changed. A service whose
//! key is unchanged is taken from the tree as it is, when every one of its files is still
//! the one the previous lock records and the stat record vouches for it (see
//! [`super::known`]); else it is rendered as if there were no memo.
//!
//! It is trusted as the stat record is: it lives in the user cache
//! (`<cache>/check/v1/<SHA-256 of the canonical --out path>.memo`), never in the tree or
//! the repository; it is bound to one lock by that lock's digest (`record::lock_digest`;
//! a memo for another lock is ignored), checksummed, bounded in size and decoded without
//! trusting a length. Only a write uses it: `--check` always renders, so a committed
//! tree is always compared with what the inputs make now.

use super::record::Checked;
use crate::artifact::{Memo, Recorded};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MAGIC: &[u8; 16] = b"clawc-memo-3\n\0\0\0";
/// The largest memo read (a 30,000-agent pod's is about 7 MB).
const MAX_SIZE: usize = crate::disk::MAX_BOOKKEEPING as usize;

/// Where the memo of the tree whose stat record is at `record` is kept.
pub(crate) fn path(record: &Path) -> PathBuf {
    let mut p = record.as_os_str().to_owned();
    p.push(".memo");
    PathBuf::from(p)
}

/// The memo at `path` if it is whole and was stored with the lock whose digest is `lock`,
/// with the [`Seal`] of its bytes: its services read (each one's name, key and where its
/// files are), their files left in the mapped file until asked for ([`Stored::files`]). At
/// 30,000 agent ids a memo is 7 MB; what the heap holds of it grows with the services, not
/// their agent ids (its pages are the page cache's).
pub(crate) fn load(path: &Path, lock: &[u8; 32]) -> Option<(Stored, Seal)> {
    let (file, len) = crate::disk::open_cache_file(path, MAX_SIZE)?;
    Stored::read(&file, len, lock)
}

/// A memo as stored: each service's key and where its files are in the file, which is
/// mapped (read only: clawc replaces a memo by renaming a new file over it, never writing
/// one in place); a service's files are decoded when asked for, without a read each.
#[derive(Debug)]
pub(crate) struct Stored {
    map: memmap2::Mmap,
    services: BTreeMap<String, Service>,
}

/// A service of a [`Stored`] memo: its render key, and its files' bytes in the memo (their
/// count first).
#[derive(Debug)]
struct Service {
    key: [u8; 32],
    at: usize,
    end: usize,
}

impl Stored {
    /// The memo in `file` (`len` bytes), gone through once to check its sum and find its
    /// services; `None` unless it is whole and for `lock`.
    fn read(file: &std::fs::File, len: usize, lock: &[u8; 32]) -> Option<(Stored, Seal)> {
        // SAFETY: the mapping is read only, and of a memo in the user's cache, which clawc
        // writes only by renaming a new file over it, never changing one in place (as the
        // stat record, `Record::map`): the bytes stay those checked below while mapped.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file) }.ok()?;
        let (body, sum) = map.split_last_chunk::<4>()?;
        if crc32fast::hash(body).to_le_bytes() != *sum {
            return None;
        }
        let mut r = Reader(body);
        if r.take(16)? != MAGIC || r.take(32)? != lock {
            return None;
        }
        let mut services = BTreeMap::new();
        for _ in 0..r.len()? {
            let name = r.str()?.to_string();
            let key = r.take(32)?.try_into().ok()?;
            let at = body.len() - r.0.len();
            for _ in 0..r.len()? {
                let n = r.len()?;
                r.take(n)?;
                r.take(4)?;
            }
            services.insert(name, Service { key, at, end: body.len() - r.0.len() });
        }
        // Nothing after the last service.
        let seal = Seal { len, sum: u32::from_le_bytes(*sum) };
        r.0.is_empty().then(|| (Stored { services, map }, seal))
    }

    /// The services, in name order.
    pub(crate) fn services(&self) -> impl Iterator<Item = &str> {
        self.services.keys().map(String::as_str)
    }

    /// Service `name`'s render key and files, from the memo; `None` if it has no such
    /// service or its files do not decode.
    pub(crate) fn files(&self, name: &str) -> Option<([u8; 32], Vec<Recorded>)> {
        let s = self.services.get(name)?;
        let mut r = Reader(self.map.get(s.at..s.end)?);
        // Every file takes at least 8 bytes: a count cannot ask for more than is there.
        let count = r.len()?;
        let mut files = Vec::with_capacity(count.min(r.0.len() / 8));
        for _ in 0..count {
            let path = Arc::from(r.str()?);
            let mode = u32::from_le_bytes(r.take(4)?.try_into().ok()?);
            files.push(Recorded { path, mode });
        }
        r.0.is_empty().then_some((s.key, files))
    }

    /// Writes service `name`'s entry as it is stored (its name, key and files), for the
    /// next memo, which holds the service again unchanged.
    fn copy_entry(&self, name: &str, w: &mut impl Write) -> std::io::Result<()> {
        let s = self.services.get(name).ok_or_else(|| std::io::Error::other("a service taken that the memo lacks"))?;
        put_str(w, name)?;
        w.write_all(&s.key)?;
        w.write_all(&self.map[s.at..s.end])
    }
}

/// The length of a memo's bytes and its checksum (the CRC-32 it ends with): a memo to be
/// stored that has the seal of the one loaded is not written again. (Were two memos for
/// one lock to share a seal, keeping the older would still be sound: a key names the one
/// rendering of its inputs, and every file taken is vouched for against the lock.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seal {
    len: usize,
    sum: u32,
}

/// A memo as a compile makes it: the names of the services taken from the tree (their
/// entries are copied from the stored memo, where they are unchanged), and those rendered,
/// encoded as each batch comes into an unnamed file in `--out`: no service's paths are
/// held (at 30,000 agent ids the rendered ones' were 3 MB at a fresh compile's peak, the
/// taken ones' 5 MB at a recompile's). Stored by [`store`].
#[derive(Default)]
pub(crate) struct Making {
    taken: BTreeSet<String>,
    rendered: Option<std::fs::File>,
    /// How many services, and how many bytes, `rendered` holds.
    count: usize,
    len: u64,
    /// A batch could not be kept: the memo is not stored.
    failed: bool,
}

impl Making {
    /// Notes the services taken from the tree (their files are the stored memo's).
    pub(crate) fn taken(&mut self, memo: Memo) {
        self.taken.extend(memo.0.into_keys());
    }

    /// Keeps a batch of rendered services, which come after those of the batch before in
    /// name order, in the file made by `file` the first time.
    pub(crate) fn rendered(&mut self, part: &Memo, file: impl FnOnce() -> std::io::Result<std::fs::File>) {
        use std::os::unix::fs::FileExt;
        if self.failed || part.0.is_empty() {
            return;
        }
        let mut b = Vec::new();
        let keep = || -> std::io::Result<()> {
            for (service, (key, files)) in &part.0 {
                put_entry(&mut b, service, key, files)?;
            }
            let f = match &mut self.rendered {
                Some(f) => f,
                None => self.rendered.insert(file()?),
            };
            f.write_all_at(&b, self.len)
        };
        match keep() {
            Ok(()) => {
                self.len += b.len() as u64;
                self.count += part.0.len();
            }
            Err(_) => self.failed = true,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.taken.is_empty() && self.count == 0
    }

    /// Writes its entries in service order: the taken ones, copied from `stored`, merged
    /// with the rendered ones read back.
    fn write_entries(&self, w: &mut impl Write, stored: Option<&Stored>) -> std::io::Result<()> {
        let empty: &[u8] = &[];
        let mut rendered = std::io::BufReader::new(match &self.rendered {
            Some(f) => Box::new(crate::runs::Part { file: f, at: 0, end: self.len }) as Box<dyn std::io::Read>,
            None => Box::new(empty),
        });
        let mut head = read_name(&mut rendered)?;
        for service in &self.taken {
            while let Some(name) = head.take_if(|n| n.as_str() < service.as_str()) {
                copy_entry(&mut rendered, &name, w)?;
                head = read_name(&mut rendered)?;
            }
            stored.ok_or_else(|| std::io::Error::other("services taken without a stored memo"))?.copy_entry(service, w)?;
        }
        while let Some(name) = head.take() {
            copy_entry(&mut rendered, &name, w)?;
            head = read_name(&mut rendered)?;
        }
        Ok(())
    }
}

/// The next entry's service name, or `None` at the end.
fn read_name(r: &mut impl std::io::Read) -> std::io::Result<Option<String>> {
    let mut n = [0; 4];
    match r.read_exact(&mut n) {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        r => r?,
    }
    let name = read_bytes(r, u32::from_le_bytes(n) as usize)?;
    String::from_utf8(name).map(Some).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "a service name is not UTF-8"))
}

fn read_bytes(r: &mut impl std::io::Read, n: usize) -> std::io::Result<Vec<u8>> {
    if n > MAX_SIZE {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "longer than a memo"));
    }
    let mut b = vec![0; n];
    r.read_exact(&mut b)?;
    Ok(b)
}

/// Copies the rest of the entry of service `name` (its key and files) from `r` into `w`.
fn copy_entry(r: &mut impl std::io::Read, name: &str, w: &mut impl Write) -> std::io::Result<()> {
    put_str(w, name)?;
    let mut key_and_count = [0; 36];
    r.read_exact(&mut key_and_count)?;
    w.write_all(&key_and_count)?;
    for _ in 0..u32::from_le_bytes(key_and_count[32..].try_into().expect("four bytes")) {
        let mut n = [0; 4];
        r.read_exact(&mut n)?;
        w.write_all(&n)?;
        let path_and_mode = read_bytes(r, u32::from_le_bytes(n) as usize + 4)?;
        w.write_all(&path_and_mode)?;
    }
    Ok(())
}

/// Writes the memo `made`, bound to the lock whose digest is `lock`, to `path` atomically
/// (see `disk::replace_cache_file`), unless its bytes would have the seal of `previous`, the memo
/// loaded (which holds the services taken). Failures are ignored: the memo only ever saves
/// work.
pub(crate) fn store(path: &Path, lock: &[u8; 32], made: &Making, previous: Option<&(Stored, Seal)>) {
    if made.failed || made.is_empty() {
        return;
    }
    let stored = previous.map(|(s, _)| s);
    let mut sealing = Checked::new(std::io::sink());
    if encode(&mut sealing, lock, made, stored).is_err() {
        return;
    }
    if previous.map(|(_, seal)| *seal) == Some(Seal { len: sealing.len + 4, sum: sealing.crc.finalize() }) {
        return;
    }
    let _ = crate::disk::replace_cache_file(path, |file| {
        // Streamed, not built in memory: at 30,000 agent ids a memo is 7 MB.
        let mut w = Checked::new(std::io::BufWriter::new(file));
        encode(&mut w, lock, made, stored)?;
        let sum = w.crc.finalize();
        w.inner.write_all(&sum.to_le_bytes())?;
        w.inner.flush()
    });
}

/// Magic, the lock's digest, the count of services; per service its name, key and files
/// (path, mode), in name order. The CRC-32 of all of it follows (written by the caller).
fn encode(w: &mut impl Write, lock: &[u8; 32], made: &Making, stored: Option<&Stored>) -> std::io::Result<()> {
    w.write_all(MAGIC)?;
    w.write_all(lock)?;
    put_len(w, made.taken.len() + made.count)?;
    made.write_entries(w, stored)
}

fn put_entry(w: &mut impl Write, service: &str, key: &[u8; 32], files: &[Recorded]) -> std::io::Result<()> {
    put_str(w, service)?;
    w.write_all(key)?;
    put_len(w, files.len())?;
    for f in files {
        put_str(w, &f.path)?;
        w.write_all(&f.mode.to_le_bytes())?;
    }
    Ok(())
}

fn put_len(w: &mut impl Write, n: usize) -> std::io::Result<()> {
    let n = u32::try_from(n).map_err(|_| std::io::Error::other("too long for a memo"))?;
    w.write_all(&n.to_le_bytes())
}

fn put_str(w: &mut impl Write, s: &str) -> std::io::Result<()> {
    put_len(w, s.len())?;
    w.write_all(s.as_bytes())
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

    fn str(&mut self) -> Option<&'b str> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memo() -> Memo {
        let file = |p: &str, mode: u32| Recorded { path: p.into(), mode };
        let mut m = Memo::default();
        m.0.insert("a".into(), ([1; 32], vec![file("context/a/CLAWDAPUS.md", 0o644), file("report/a.json", 0o600)]));
        m.0.insert("b".into(), ([4; 32], vec![]));
        m
    }

    /// `memo` as a compile makes it: the services of `taken` noted as taken, the rest
    /// rendered a service at a time, into a file of their own.
    fn made(memo: &Memo, taken: &[&str]) -> Making {
        let mut m = Making::default();
        let (held, rendered): (Vec<_>, Vec<_>) = memo.0.iter().partition(|(s, _)| taken.contains(&s.as_str()));
        m.taken(Memo(held.into_iter().map(|(s, e)| (s.clone(), e.clone())).collect()));
        for (s, e) in rendered {
            m.rendered(&Memo([(s.clone(), e.clone())].into()), tempfile::tempfile);
        }
        m
    }

    /// The bytes [`store`] writes.
    fn bytes(lock: &[u8; 32], memo: &Memo) -> Vec<u8> {
        let mut b = Vec::new();
        encode(&mut b, lock, &made(memo, &[]), None).unwrap();
        let sum = crc32fast::hash(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    /// The memo stored as `b`, read as a compile loads it.
    fn stored(b: &[u8], lock: &[u8; 32]) -> Option<(Stored, Seal)> {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b).unwrap();
        Stored::read(&f, b.len(), lock)
    }

    /// The memo stored as `b`, every service's files read back.
    fn decode(b: &[u8], lock: &[u8; 32]) -> Option<Memo> {
        let (stored, seal) = stored(b, lock)?;
        assert_eq!(seal, Seal { len: b.len(), sum: crc32fast::hash(&b[..b.len() - 4]) });
        stored.services().map(|name| Some((name.to_string(), stored.files(name)?))).collect::<Option<_>>().map(Memo)
    }

    /// Whichever services were taken and which rendered, the memo is the same bytes: each
    /// service once, in name order.
    #[test]
    fn a_memo_is_the_same_bytes_however_its_services_were_had() {
        let mut memo = memo();
        let file = |p: &str| Recorded { path: p.into(), mode: 0o644 };
        memo.0.insert("c-long-name".into(), ([7; 32], (0..500).map(|i| file(&format!("context/c-{i}/tools.json"))).collect()));
        memo.0.insert("0".into(), ([2; 32], vec![file("context/0/x")]));
        let want = bytes(&[9; 32], &memo);
        assert_eq!(decode(&want, &[9; 32]), Some(memo.clone()));
        let (loaded, _) = stored(&want, &[9; 32]).unwrap();
        let names: Vec<&str> = memo.0.keys().map(String::as_str).collect();
        for mask in 0..1 << names.len() {
            let taken: Vec<&str> = names.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, n)| *n).collect();
            let mut b = Vec::new();
            encode(&mut b, &[9; 32], &made(&memo, &taken), Some(&loaded)).unwrap();
            assert_eq!(b, want[..want.len() - 4], "taken: {taken:?}");
        }
    }

    #[test]
    fn a_memo_decodes_as_stored_and_only_for_its_lock() {
        let b = bytes(&[9; 32], &memo());
        assert_eq!(decode(&b, &[9; 32]), Some(memo()));
        assert_eq!(decode(&b, &[8; 32]), None);
        let (loaded, _) = stored(&b, &[9; 32]).unwrap();
        assert_eq!(loaded.files("c"), None, "a service it does not hold");
        // Taken services need the memo they were taken from.
        assert!(encode(&mut Vec::new(), &[9; 32], &made(&memo(), &["a"]), None).is_err());
    }

    #[test]
    fn a_torn_or_garbled_memo_is_ignored() {
        let b = bytes(&[9; 32], &memo());
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
        put_str(&mut b, "a").unwrap();
        b.extend_from_slice(&[1; 32]);
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        let sum = crc32fast::hash(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(decode(&b, &[9; 32]), None);
    }
}
