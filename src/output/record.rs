//! The stat record: what a `compile --check` saw of the files it read and found to hash
//! to what `clawc.lock` records, so that the next check re-reads only the files whose
//! metadata changed (git's index does the same for `git status`).
//!
//! It lives outside the tree, in the user's cache directory
//! (`<cache>/check/v1/<SHA-256 of the canonical --out path>`), because `clawc.lock` is
//! committed and must be the same bytes on every machine, and because the committed tree
//! is written by whoever opened the pull request. It is bound to one lock by that lock's
//! SHA-256; a record for another lock, or one that does not decode, is ignored.
//!
//! A file is vouched for only if its `lstat` now equals the recorded one in device, inode,
//! size, modification time and status-change time (both with nanoseconds), and both times
//! are strictly older than the record's time. That time is read from the coarse real-time
//! clock (the clock the kernel stamps files with, or below it) *before* the check looks at
//! any file, so a file changed while or after it was read carries a time at or after the
//! record's and is read again ("racy git"). `ctime` cannot be set from user space: an
//! edit that keeps the size and puts the old `mtime` back still changes it, and a file
//! replaced by another has another inode or `ctime`.

use sha2::{Digest, Sha256};
use std::fs::Metadata;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

const MAGIC: &[u8; 16] = b"clawc-statrec-1\n";
/// Magic, the lock's SHA-256, the record's time (seconds, nanoseconds), the two counts.
const HEADER: usize = 16 + 32 + 16 + 8;
/// A tag byte (0: nothing recorded, 1: a stamp) and the stamp's seven numbers.
const ENTRY: usize = 1 + 7 * 8;
/// SHA-256 of everything before it (a torn or garbled file is ignored, not misread).
const TRAILER: usize = 32;
/// Most entries a record holds (its size is checked before it is read).
const MAX_ENTRIES: usize = 4 << 20;

/// A time as the file system records it: seconds and nanoseconds since the epoch.
pub(crate) type Time = (i64, i64);

/// What `lstat` says of a file, as far as the record compares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: Time,
    pub ctime: Time,
}

impl Stamp {
    pub(crate) fn of(m: &Metadata) -> Stamp {
        Stamp { dev: m.dev(), ino: m.ino(), size: m.size(), mtime: (m.mtime(), m.mtime_nsec()), ctime: (m.ctime(), m.ctime_nsec()) }
    }

    /// The same from a `stat` structure (outputs are looked at through [`crate::disk::Walk`]).
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)] // the field types vary by architecture
    pub(crate) fn of_stat(st: &rustix::fs::Stat) -> Stamp {
        Stamp {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
        }
    }

    /// Changed at or after `time`: a change within the same clock tick as the record's
    /// time would not show in the stamp, so the file must be read again.
    fn racy(&self, time: Time) -> bool {
        self.mtime >= time || self.ctime >= time
    }
}

/// The coarse real-time clock: never later than the time the kernel stamps a file changed
/// after this call with (those stamps come from this clock or a finer one).
pub(crate) fn now() -> Time {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &raw mut ts) };
    if rc != 0 {
        // No clock: a time before every file, so nothing recorded is ever vouched for.
        return (i64::MIN, 0);
    }
    (ts.tv_sec, ts.tv_nsec)
}

/// The SHA-256 of a lock's bytes, as the record binds to it.
pub(crate) fn lock_digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The stamps of one lock's inputs and outputs, in the lock's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    lock: [u8; 32],
    time: Time,
    pub inputs: Vec<Option<Stamp>>,
    pub outputs: Vec<Option<Stamp>>,
}

impl Record {
    /// An empty record for the lock `lock` (its digest), stamped `time` (taken with [`now`]
    /// before anything was looked at).
    pub(crate) fn new(lock: [u8; 32], time: Time, inputs: usize, outputs: usize) -> Record {
        Record { lock, time, inputs: vec![None; inputs], outputs: vec![None; outputs] }
    }

    pub(crate) fn vouches_input(&self, i: usize, now: &Stamp) -> bool {
        self.vouches(self.inputs.get(i), now)
    }

    pub(crate) fn vouches_output(&self, i: usize, now: &Stamp) -> bool {
        self.vouches(self.outputs.get(i), now)
    }

    fn vouches(&self, recorded: Option<&Option<Stamp>>, now: &Stamp) -> bool {
        matches!(recorded, Some(Some(r)) if r == now && !r.racy(self.time))
    }

    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER + (self.inputs.len() + self.outputs.len()) * ENTRY + TRAILER);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&self.lock);
        b.extend_from_slice(&self.time.0.to_le_bytes());
        b.extend_from_slice(&self.time.1.to_le_bytes());
        b.extend_from_slice(&(self.inputs.len() as u32).to_le_bytes());
        b.extend_from_slice(&(self.outputs.len() as u32).to_le_bytes());
        for e in self.inputs.iter().chain(&self.outputs) {
            match e {
                None => b.extend_from_slice(&[0; ENTRY]),
                Some(s) => {
                    b.push(1);
                    for n in [s.dev, s.ino, s.size] {
                        b.extend_from_slice(&n.to_le_bytes());
                    }
                    for n in [s.mtime.0, s.mtime.1, s.ctime.0, s.ctime.1] {
                        b.extend_from_slice(&n.to_le_bytes());
                    }
                }
            }
        }
        let sum = Sha256::digest(&b);
        b.extend_from_slice(&sum);
        b
    }

    /// The record in `b` if it is whole and is for the lock `lock` with these counts.
    fn decode(b: &[u8], lock: &[u8; 32], inputs: usize, outputs: usize) -> Option<Record> {
        if b.len() != size(inputs, outputs)? || &b[..16] != MAGIC || &b[16..48] != lock {
            return None;
        }
        let (body, sum) = b.split_at(b.len() - TRAILER);
        if Sha256::digest(body)[..] != *sum {
            return None;
        }
        let u = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let i = |at: usize| u(at).cast_signed();
        let time = (i(48), i(56));
        let counts = (u32::from_le_bytes(b[64..68].try_into().ok()?), u32::from_le_bytes(b[68..72].try_into().ok()?));
        if counts != (u32::try_from(inputs).ok()?, u32::try_from(outputs).ok()?) {
            return None;
        }
        let mut entries = Vec::with_capacity(inputs + outputs);
        for n in 0..inputs + outputs {
            let at = HEADER + n * ENTRY;
            entries.push(match b[at] {
                0 => None,
                1 => Some(Stamp {
                    dev: u(at + 1),
                    ino: u(at + 9),
                    size: u(at + 17),
                    mtime: (i(at + 25), i(at + 33)),
                    ctime: (i(at + 41), i(at + 49)),
                }),
                _ => return None,
            });
        }
        let outputs = entries.split_off(inputs);
        Some(Record { lock: *lock, time, inputs: entries, outputs })
    }
}

/// The size of a record with these counts (`None`: more than a record may hold).
fn size(inputs: usize, outputs: usize) -> Option<usize> {
    let n = inputs.checked_add(outputs).filter(|n| *n <= MAX_ENTRIES)?;
    Some(HEADER + n * ENTRY + TRAILER)
}

/// Where the record of the tree in `out` is kept under `dir` (the records' directory of
/// the user cache), or `None`: `out` has no canonical path, or `dir` lies inside `out` or
/// inside one of `untrusted` (the input root): a record there would be written by the
/// author of the tree it vouches for.
pub(crate) fn path(dir: &Path, out: &Path, untrusted: &[&Path]) -> Option<PathBuf> {
    let out = out.canonicalize().ok()?;
    let dir = resolved(dir)?;
    if dir.starts_with(&out) || untrusted.iter().any(|u| dir.starts_with(u)) {
        return None;
    }
    let name = crate::digest::sha256_hex(out.as_os_str().as_encoded_bytes());
    Some(dir.join(name))
}

/// `dir` with symlinks resolved as far as it exists (the rest appended as written).
fn resolved(dir: &Path) -> Option<PathBuf> {
    if !dir.is_absolute() || dir.components().any(|c| matches!(c, Component::ParentDir)) {
        return None;
    }
    let mut rest = Vec::new();
    let mut at = dir;
    loop {
        if let Ok(real) = at.canonicalize() {
            return Some(rest.iter().rev().fold(real, |p, c| p.join(c)));
        }
        rest.push(at.file_name()?);
        at = at.parent()?;
    }
}

/// The record at `path` for the lock whose digest is `lock`, if there is a whole one. Read
/// without following a symlink, only if it is a regular file of exactly the size such a
/// record has.
pub(crate) fn load(path: &Path, lock: &[u8; 32], inputs: usize, outputs: usize) -> Option<Record> {
    let want = size(inputs, outputs)?;
    let file = crate::disk::open(path, false).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() != want as u64 {
        return None;
    }
    let mut b = Vec::with_capacity(want);
    (&file).take(want as u64 + 1).read_to_end(&mut b).ok()?;
    Record::decode(&b, lock, inputs, outputs)
}

/// Writes `record` to `path` atomically (a temporary file beside it, renamed over it;
/// a symlink there is replaced, never followed). Failures are ignored: the record only
/// ever saves work.
pub(crate) fn store(path: &Path, record: &Record) {
    let _ = try_store(path, record);
}

fn try_store(path: &Path, record: &Record) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("no parent"))?;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, &record.encode())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(ino: u64) -> Stamp {
        Stamp { dev: 7, ino, size: 10, mtime: (100, 5), ctime: (100, 9) }
    }

    fn record() -> Record {
        let mut r = Record::new([3; 32], (200, 0), 2, 3);
        r.inputs[0] = Some(stamp(1));
        r.outputs[1] = Some(stamp(2));
        r.outputs[2] = Some(Stamp { mtime: (-1, 999_999_999), ..stamp(3) });
        r
    }

    #[test]
    fn round_trip_and_binding() {
        let r = record();
        let b = r.encode();
        assert_eq!(b.len(), size(2, 3).unwrap());
        assert_eq!(Record::decode(&b, &[3; 32], 2, 3), Some(r));
        assert_eq!(Record::decode(&b, &[4; 32], 2, 3), None, "another lock");
        assert_eq!(Record::decode(&b, &[3; 32], 3, 2), None, "other counts");
        assert_eq!(Record::decode(&b[..b.len() - 1], &[3; 32], 2, 3), None, "truncated");
        for at in [0, 20, 50, 70, HEADER, HEADER + 3, b.len() - 1] {
            let mut bad = b.clone();
            bad[at] ^= 1;
            assert_eq!(Record::decode(&bad, &[3; 32], 2, 3), None, "a flipped bit at {at}");
        }
        assert_eq!(Record::decode(&[0; 300], &[3; 32], 2, 3), None);
    }

    #[test]
    fn only_an_identical_older_stamp_vouches() {
        let r = record();
        assert!(r.vouches_input(0, &stamp(1)));
        assert!(!r.vouches_input(1, &stamp(1)), "nothing recorded");
        assert!(!r.vouches_input(9, &stamp(1)), "out of range");
        assert!(!r.vouches_output(1, &stamp(1)), "another inode");
        for other in [
            Stamp { dev: 8, ..stamp(2) },
            Stamp { size: 11, ..stamp(2) },
            Stamp { mtime: (100, 6), ..stamp(2) },
            Stamp { ctime: (100, 10), ..stamp(2) },
            Stamp { ctime: (101, 9), ..stamp(2) },
        ] {
            assert!(!r.vouches_output(1, &other), "{other:?}");
        }
        assert!(r.vouches_output(1, &stamp(2)));
        // Racy: changed at or after the record's time.
        let mut late = Record::new([3; 32], (100, 9), 0, 1);
        late.outputs[0] = Some(stamp(2));
        assert!(!late.vouches_output(0, &stamp(2)), "ctime equal to the record's time");
        let mut future = Record::new([3; 32], (200, 0), 0, 1);
        future.outputs[0] = Some(Stamp { mtime: (300, 0), ..stamp(2) });
        assert!(!future.vouches_output(0, &Stamp { mtime: (300, 0), ..stamp(2) }), "mtime after the record's time");
    }

    #[test]
    fn stored_beside_and_never_inside_out_or_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("repo/out");
        std::fs::create_dir_all(&out).unwrap();
        let repo = dir.path().join("repo").canonicalize().unwrap();
        let cache = dir.path().join("cache/check/v1");
        let p = path(&cache, &out, &[&repo]).unwrap();
        assert!(p.starts_with(dir.path().canonicalize().unwrap().join("cache/check/v1")));
        assert_eq!(path(&out.join("cache"), &out, &[]), None, "inside --out");
        assert_eq!(path(&repo.join(".cache"), &out, &[&repo]), None, "inside the input root");
        assert_eq!(path(Path::new("rel"), &out, &[]), None, "relative");
        let r = record();
        store(&p, &r);
        assert_eq!(load(&p, &[3; 32], 2, 3), Some(r.clone()));
        assert_eq!(load(&p, &[3; 32], 2, 4), None);
        // A symlink where the record goes is neither read through nor written through.
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, r.encode()).unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&target, &p).unwrap();
        assert_eq!(load(&p, &[3; 32], 2, 3), None);
        store(&p, &Record::new([3; 32], (1, 0), 2, 3));
        assert!(!p.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), r.encode(), "the link's target is untouched");
    }
}
