//! The stat record: what a `compile --check` saw of the files it read and found to hash
//! to what `clawc.lock` records, so that the next check re-reads only the files whose
//! metadata changed (git's index does the same for `git status`).
//!
//! It also keeps the lock's own stamp and a copy of what a check reads of the lock (see
//! `lock::copy`; a write keeps it too, `lock::copy_of`): a check or a recompile whose lock
//! the record vouches for neither reads, hashes nor parses it (1.4 MB of JSON for the
//! 3,000-agent pod, 13 MB at 30,000 agent ids), as git reads its index and not the
//! objects. And it keeps the stamps of the directories that hold the outputs' directories,
//! so a check need not `lstat` the directories in one whose stamp is unchanged (see
//! `lock::trusted_directories`).
//!
//! It lives outside the tree, in the user's cache directory
//! (`<cache>/check/v1/<SHA-256 of the canonical --out path>`), because `clawc.lock` is
//! committed and must be the same bytes on every machine, and because the committed tree
//! is written by whoever opened the pull request. It is bound to one lock by that lock's
//! binding digest ([`lock_digest`]: BLAKE3, never written into the tree); a record for
//! another lock, or one that does not decode, is ignored.
//!
//! A file is vouched for only if its `lstat` now equals the recorded one in device, inode,
//! size, modification time and status-change time (both with nanoseconds), and both times
//! are strictly older than the record's time. That time is read from the coarse real-time
//! clock (the clock the kernel stamps files with, or below it) *before* the check looks at
//! any file, so a file changed while or after it was read carries a time at or after the
//! record's and is read again ("racy git"). `ctime` cannot be set from user space: an
//! edit that keeps the size and puts the old `mtime` back still changes it, and a file
//! replaced by another has another inode or `ctime`.
//!
//! A compile that writes the tree leaves a record too (`output::known`): each output as
//! it was found current or written, and each input with the `fstat` of the bytes the
//! compile read and hashed, when the input last changed before the compile began (its
//! input log's time, taken before any read: the same rule, so a change while or after it
//! was read shows). The first check after a compile then reads no input again. It stamps
//! the directories that hold the outputs' directories too, each only if it is as the
//! compile found it when it opened `--out` (see `output::known`), so the next recompile
//! and check trust the directories in them as a check's own record lets them.

use std::io::{Read, Write};
use std::path::Path;

const MAGIC: &[u8; 16] = b"clawc-statrec-3\n";
/// Magic, the lock's digest ([`lock_digest`]), the record's time (seconds, nanoseconds),
/// the counts of inputs, outputs and directories, the length of the lock's copy.
const HEADER: usize = 16 + 32 + 16 + 12 + 4;
/// A tag byte (0: nothing recorded, 1: a stamp) and the stamp's seven numbers.
pub(crate) const ENTRY: usize = 1 + 7 * 8;
/// CRC-32 of everything before it: a torn or garbled file is ignored, not misread. (The
/// record is written only by clawc, by rename, in the user's cache: a checksum against
/// accidents is enough, and over a megabyte it costs a tenth of a SHA-256.)
const TRAILER: usize = 4;
/// Most entries a record holds (its size is checked before it is read).
const MAX_ENTRIES: usize = 4 << 20;
/// The largest copy of a lock a record holds (a lock is at most this size too).
const MAX_COPY: usize = crate::disk::MAX_BOOKKEEPING as usize;

pub(crate) use crate::disk::{Stamp, Time, now};

/// The digest of a lock's bytes, as the record (and the render memo) binds to it: the
/// binding digest ([`crate::digest::binding`]), never written into the tree.
pub(crate) fn lock_digest(bytes: &[u8]) -> [u8; 32] {
    crate::digest::binding(bytes)
}

/// [`lock_digest`] of the bytes that pass through `inner`, as a lock is written or read.
pub(crate) fn lock_hashing<R>(inner: R) -> crate::digest::Hashing<R, crate::digest::Binding> {
    crate::digest::Hashing::binding(inner)
}

/// The stamps of one lock's inputs and outputs, in the lock's order, and the lock's copy.
///
/// Kept as the bytes of its file (less the checksum), read in place: a check of the
/// 3,000-agent pod looks up 9,702 stamps and decodes none it does not compare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// Header, `inputs + outputs + dirs + 1` entries (the last one the lock's), the copy.
    buf: Bytes,
    inputs: usize,
    outputs: usize,
    /// Directories whose entries a check may trust unchanged while their stamp is (see
    /// [`crate::lock`]'s replay: the parents of the directories holding outputs).
    dirs: usize,
}

/// A record's bytes, less the checksum: made by this run, or a file's own pages mapped.
///
/// A check maps the record it reads rather than copying it (1.2 MB at 3,000 agent ids,
/// 12 MB at 30,000): copying a megabyte into memory the process has not touched yet costs
/// a page fault per page, 1 ms of the 3,000-agent check, and mapping the file's pages
/// costs a fifth of that. git reads its index the same way.
#[derive(Debug)]
enum Bytes {
    Made(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl Bytes {
    fn get(&self) -> &[u8] {
        match self {
            Bytes::Made(b) => b,
            Bytes::Mapped(m) => &m[..m.len() - TRAILER],
        }
    }

    /// The bytes to change: a mapped record is copied first (only a record made by this
    /// run is ever changed, so this does not happen in practice).
    fn made(&mut self) -> &mut Vec<u8> {
        if let Bytes::Mapped(_) = self {
            *self = Bytes::Made(self.get().to_vec());
        }
        match self {
            Bytes::Made(b) => b,
            Bytes::Mapped(_) => unreachable!("made above"),
        }
    }
}

impl Clone for Bytes {
    fn clone(&self) -> Bytes {
        Bytes::Made(self.get().to_vec())
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Bytes) -> bool {
        self.get() == other.get()
    }
}

impl Eq for Bytes {}

impl Record {
    /// An empty record for the lock `lock` (its digest), stamped `time` (taken with [`now`]
    /// before anything was looked at).
    pub(crate) fn new(lock: [u8; 32], time: Time, inputs: usize, outputs: usize, dirs: usize) -> Record {
        let entries = HEADER + (inputs + outputs + dirs + 1) * ENTRY;
        let mut buf = Vec::with_capacity(entries);
        buf.extend_from_slice(&header(lock, time, inputs, outputs, dirs));
        buf.resize(entries, 0);
        Record { buf: Bytes::Made(buf), inputs, outputs, dirs }
    }

    /// The digest ([`lock_digest`]) of the lock this record is bound to.
    pub(crate) fn lock(&self) -> [u8; 32] {
        self.buf.get()[16..48].try_into().expect("32 bytes")
    }

    /// How many inputs it has stamps for.
    pub(crate) fn inputs(&self) -> usize {
        self.inputs
    }

    /// Whether this is the record of a lock with that digest and these counts.
    pub(crate) fn is_for(&self, lock: &[u8; 32], inputs: usize, outputs: usize) -> bool {
        self.lock() == *lock && self.inputs == inputs && self.outputs == outputs
    }

    pub(crate) fn set_input(&mut self, i: usize, stamp: Option<Stamp>) {
        if i < self.inputs {
            self.set(i, stamp);
        }
    }

    pub(crate) fn set_output(&mut self, i: usize, stamp: Option<Stamp>) {
        if i < self.outputs {
            self.set(self.inputs + i, stamp);
        }
    }

    pub(crate) fn set_dir(&mut self, i: usize, stamp: Option<Stamp>) {
        if i < self.dirs {
            self.set(self.inputs + self.outputs + i, stamp);
        }
    }

    /// The copy of the lock, if the lock now stamped `now` is the one it was made from.
    pub(crate) fn copy_for(&self, now: &Stamp) -> Option<&[u8]> {
        self.copy().filter(|_| self.vouches(self.inputs + self.outputs + self.dirs, now))
    }

    /// The copy of the lock whose digest is [`Record::lock`], if it has one: the caller
    /// has hashed the lock, or the record vouches for its stamp ([`Record::copy_for`]).
    pub(crate) fn copy(&self) -> Option<&[u8]> {
        let at = HEADER + (self.inputs + self.outputs + self.dirs + 1) * ENTRY;
        let buf = self.buf.get();
        (buf.len() > at).then(|| &buf[at..])
    }

    /// Keeps `copy` of the lock stamped `stamp` (replacing any).
    pub(crate) fn set_copy(&mut self, stamp: Stamp, copy: &[u8]) {
        let lock = self.inputs + self.outputs + self.dirs;
        self.set(lock, Some(stamp));
        let buf = self.buf.made();
        buf.truncate(HEADER + (lock + 1) * ENTRY);
        buf.extend_from_slice(copy);
        buf[76..80].copy_from_slice(&(copy.len() as u32).to_le_bytes());
    }

    fn set(&mut self, n: usize, stamp: Option<Stamp>) {
        let at = HEADER + n * ENTRY;
        put_entry(&mut self.buf.made()[at..at + ENTRY], stamp);
    }

    #[cfg(test)]
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.buf.get().len() + TRAILER);
        b.extend_from_slice(self.buf.get());
        b.extend_from_slice(&self.checksum());
        b
    }

    fn checksum(&self) -> [u8; 4] {
        crc32fast::hash(self.buf.get()).to_le_bytes()
    }

    /// The record in `b` if it is whole (see [`Record::whole`]).
    #[cfg(test)]
    fn decode(b: Vec<u8>) -> Option<Record> {
        let (inputs, outputs, dirs) = Record::whole(&b)?;
        let mut b = b;
        b.truncate(b.len() - TRAILER);
        Some(Record { buf: Bytes::Made(b), inputs, outputs, dirs })
    }

    /// The record in `file` (`len` bytes, its size when it was opened), its pages mapped,
    /// if it is whole.
    fn map(file: &std::fs::File, len: usize) -> Option<Record> {
        // SAFETY: the mapping is read only, and of a record in the user's cache, which
        // clawc writes only by renaming a new file over it, never changing one in place:
        // the bytes mapped stay those checked below while they are mapped. (A process of
        // the same user truncating the file while a check reads it would end the check
        // with SIGBUS, as it would end git reading its index.)
        let map = unsafe { memmap2::MmapOptions::new().len(len).populate().map(file) }.ok()?;
        let (inputs, outputs, dirs) = Record::whole(&map)?;
        Some(Record { buf: Bytes::Mapped(map), inputs, outputs, dirs })
    }

    /// The counts of the record whose file holds the bytes `b`, if it is whole: its size
    /// agrees with its counts, its checksum with its bytes, and every entry's tag is 0 or 1.
    fn whole(b: &[u8]) -> Option<(usize, usize, usize)> {
        let header: &[u8; HEADER] = b.first_chunk()?;
        let (inputs, outputs, dirs) = counts_of(header, b.len())?;
        let (body, sum) = b.split_last_chunk::<TRAILER>()?;
        if crc32fast::hash(body).to_le_bytes() != *sum {
            return None;
        }
        (0..=inputs + outputs + dirs).all(|n| body[HEADER + n * ENTRY] <= 1).then_some((inputs, outputs, dirs))
    }
}

/// What a record says, however it is read: its entries by position (inputs, outputs,
/// directories, then the lock's) and its time. Every rule of vouching is here once.
pub(crate) trait Stamps {
    /// How many inputs, outputs and directories it has entries for.
    fn counts(&self) -> (usize, usize, usize);
    /// Its time (see the module's documentation).
    fn time(&self) -> Time;
    /// Entry `n`'s stamp, if it has one.
    fn entry(&self, n: usize) -> Option<Stamp>;

    fn vouches(&self, entry: usize, now: &Stamp) -> bool {
        matches!(self.entry(entry), Some(r) if r == *now && !r.racy(self.time()))
    }

    fn vouches_input(&self, i: usize, now: &Stamp) -> bool {
        i < self.counts().0 && self.vouches(i, now)
    }

    fn vouches_output(&self, i: usize, now: &Stamp) -> bool {
        let (inputs, outputs, _) = self.counts();
        i < outputs && self.vouches(inputs + i, now)
    }

    /// The stamp of output `i`, if it has one.
    fn output(&self, i: usize) -> Option<Stamp> {
        let (inputs, outputs, _) = self.counts();
        (i < outputs).then(|| self.entry(inputs + i)).flatten()
    }

    /// How many directories it has stamps for.
    fn dirs(&self) -> usize {
        self.counts().2
    }

    fn vouches_dir(&self, i: usize, now: &Stamp) -> bool {
        let (inputs, outputs, dirs) = self.counts();
        i < dirs && self.vouches(inputs + outputs + i, now)
    }
}

impl Stamps for Record {
    fn counts(&self) -> (usize, usize, usize) {
        (self.inputs, self.outputs, self.dirs)
    }

    fn time(&self) -> Time {
        time_of(self.buf.get())
    }

    fn entry(&self, n: usize) -> Option<Stamp> {
        let at = HEADER + n * ENTRY;
        decode_entry(&self.buf.get()[at..at + ENTRY])
    }
}

/// The time in a record's header.
fn time_of(header: &[u8]) -> Time {
    let i64_at = |at: usize| i64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    (i64_at(48), i64_at(56))
}

/// The stamp an entry holds (tag 1), if any.
fn decode_entry(e: &[u8]) -> Option<Stamp> {
    let u = |k: usize| u64::from_le_bytes(e[k..k + 8].try_into().expect("8 bytes"));
    let i = |k: usize| u(k).cast_signed();
    (e[0] == 1).then(|| Stamp { dev: u(1), ino: u(9), size: u(17), mtime: (i(25), i(33)), ctime: (i(41), i(49)) })
}

/// A record a write reads: checked whole once, then kept open and its entries read a
/// block at a time as they are looked up, not held (5 MB at 30,000 agent ids). It lives in
/// the user's cache, written only by clawc (by rename), so the file held open keeps the
/// bytes that were checked.
#[derive(Debug)]
pub(crate) struct OnDisk {
    file: std::fs::File,
    header: [u8; HEADER],
    counts: (usize, usize, usize),
    /// The blocks read last, latest first.
    kept: crate::runs::Recent<Vec<u8>>,
}

/// How many entries a block of an [`OnDisk`] record holds (3.6 KB).
const BLOCK: usize = 64;

impl OnDisk {
    /// The record in `file` (`len` bytes) if it is whole, its copy of the lock passed over:
    /// its size agrees with its counts and its checksum with its bytes.
    fn read(file: std::fs::File, len: usize) -> Option<OnDisk> {
        use std::os::unix::fs::FileExt;
        let mut header = [0; HEADER];
        file.read_exact_at(&mut header, 0).ok()?;
        let counts = counts_of(&header, len)?;
        let mut summed = Checked::new(std::io::sink());
        std::io::copy(&mut (&file).take((len - TRAILER) as u64), &mut summed).ok()?;
        let mut sum = [0; TRAILER];
        file.read_exact_at(&mut sum, (len - TRAILER) as u64).ok()?;
        // Nothing after it (a file that grew since its size was read is not this record).
        let whole = file.read_at(&mut [0], len as u64).ok()? == 0;
        (summed.len == len - TRAILER && summed.crc.finalize().to_le_bytes() == sum && whole).then(|| OnDisk {
            file,
            header,
            counts,
            kept: Default::default(),
        })
    }

    /// The digest ([`lock_digest`]) of the lock this record is bound to.
    pub(crate) fn lock(&self) -> [u8; 32] {
        self.header[16..48].try_into().expect("32 bytes")
    }

    /// Whether this is the record of a lock with that digest and these counts.
    fn is_for(&self, lock: &[u8; 32], inputs: usize, outputs: usize) -> bool {
        self.header[16..48] == *lock && (self.counts.0, self.counts.1) == (inputs, outputs)
    }

    /// A reader of its copy of the lock, if it has one and vouches that the lock, now
    /// stamped `now`, is the one the copy was made from (see [`Record::copy_for`]).
    pub(crate) fn copy_for(&self, now: &Stamp) -> Option<impl Read + '_> {
        let (inputs, outputs, dirs) = self.counts;
        self.copy().filter(|_| self.vouches(inputs + outputs + dirs, now))
    }

    /// A reader of its copy of the lock whose digest is [`OnDisk::lock`], if it has one:
    /// the caller has hashed the lock, or the record vouches for its stamp
    /// ([`OnDisk::copy_for`]).
    pub(crate) fn copy(&self) -> Option<impl Read + '_> {
        let (inputs, outputs, dirs) = self.counts;
        let len = u32::from_le_bytes(self.header[76..80].try_into().expect("4 bytes"));
        (len > 0).then(|| Part { file: &self.file, at: (HEADER + (inputs + outputs + dirs + 1) * ENTRY) as u64, left: u64::from(len) })
    }

    /// Block `b` of its entries: one kept, or read.
    fn block(&self, b: usize) -> Option<std::sync::Arc<Vec<u8>>> {
        use std::os::unix::fs::FileExt;
        let read = |b: usize| {
            let (inputs, outputs, dirs) = self.counts;
            let entries = (inputs + outputs + dirs + 1).saturating_sub(b * BLOCK).min(BLOCK);
            let mut bytes = vec![0; entries * ENTRY];
            self.file.read_exact_at(&mut bytes, (HEADER + b * BLOCK * ENTRY) as u64)?;
            Ok(bytes)
        };
        self.kept.get(|k| k == b, || Some(b), read).ok().flatten()
    }
}

impl Stamps for OnDisk {
    fn counts(&self) -> (usize, usize, usize) {
        self.counts
    }

    fn time(&self) -> Time {
        time_of(&self.header)
    }

    /// A block that cannot be read, or an entry whose tag is neither 0 nor 1, vouches for
    /// nothing.
    fn entry(&self, n: usize) -> Option<Stamp> {
        entry_in(&self.block(n / BLOCK)?, n)
    }
}

/// Entry `n` of a record, from the block of an [`OnDisk`] record that holds it.
fn entry_in(block: &[u8], n: usize) -> Option<Stamp> {
    let e = block.get(n % BLOCK * ENTRY..(n % BLOCK + 1) * ENTRY)?;
    (e[0] <= 1).then(|| decode_entry(e)).flatten()
}

/// An [`OnDisk`] record as one thread reads it, its entries mostly in order: the block at
/// hand is kept here, not asked of the record's shared blocks for every entry (a lock and
/// two atomic counts each, which two threads stamping 9,301 outputs made contend).
pub(crate) struct Cursor<'r> {
    disk: &'r OnDisk,
    block: std::cell::RefCell<Option<(usize, std::sync::Arc<Vec<u8>>)>>,
}

impl OnDisk {
    /// A [`Cursor`] over its entries, for one thread.
    pub(crate) fn cursor(&self) -> Cursor<'_> {
        Cursor { disk: self, block: std::cell::RefCell::new(None) }
    }
}

impl Stamps for Cursor<'_> {
    fn counts(&self) -> (usize, usize, usize) {
        self.disk.counts
    }

    fn time(&self) -> Time {
        self.disk.time()
    }

    fn entry(&self, n: usize) -> Option<Stamp> {
        let mut held = self.block.borrow_mut();
        if held.as_ref().is_none_or(|(b, _)| *b != n / BLOCK) {
            *held = Some((n / BLOCK, self.disk.block(n / BLOCK)?));
        }
        entry_in(&held.as_ref()?.1, n)
    }
}

/// A part of a file read from where it starts (by position: the file's offset is not
/// moved, so other reads of it by position are not disturbed).
struct Part<'f> {
    file: &'f std::fs::File,
    at: u64,
    left: u64,
}

impl Read for Part<'_> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let want = b.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.file.read_at(&mut b[..want], self.at)?;
        self.at += n as u64;
        self.left -= n as u64;
        Ok(n)
    }
}

/// A writer that counts and checksums (CRC-32) what passes through it: the memo as it is
/// stored, a record or a memo as it is read back.
pub(crate) struct Checked<W> {
    pub(crate) inner: W,
    pub(crate) crc: crc32fast::Hasher,
    pub(crate) len: usize,
}

impl<W: std::io::Write> Checked<W> {
    pub(crate) fn new(inner: W) -> Self {
        Checked { inner, crc: crc32fast::Hasher::new(), len: 0 }
    }
}

impl<W: std::io::Write> std::io::Write for Checked<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(b)?;
        self.crc.update(&b[..n]);
        self.len += n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A record header's counts of inputs, outputs and directories, if magic and counts agree
/// with a file of `len` bytes.
fn counts_of(header: &[u8; HEADER], len: usize) -> Option<(usize, usize, usize)> {
    if &header[..16] != MAGIC {
        return None;
    }
    let u32_at = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4 bytes")) as usize;
    let (inputs, outputs, dirs, copy) = (u32_at(64), u32_at(68), u32_at(72), u32_at(76));
    (len == size(inputs, outputs, dirs, copy)?).then_some((inputs, outputs, dirs))
}

/// The size of a record with these counts and a copy of that length (`None`: more than a
/// record may hold).
fn size(inputs: usize, outputs: usize, dirs: usize, copy: usize) -> Option<usize> {
    let n = inputs.checked_add(outputs)?.checked_add(dirs).filter(|n| *n <= MAX_ENTRIES)?;
    (copy <= MAX_COPY).then_some(HEADER + (n + 1) * ENTRY + copy + TRAILER)
}

/// The largest record there may be.
fn max_size() -> usize {
    HEADER + (MAX_ENTRIES + 1) * ENTRY + MAX_COPY + TRAILER
}

/// The record at `path` for the lock whose digest is `lock`, with these counts, if there
/// is a whole one, its copy of the lock not held: a write reads the copy once, as it
/// is decoded ([`OnDisk::copy_for`]), and it is as large as the stamps (6.5 MB at 30,000
/// agent ids), which a recompile held beside everything else.
pub(crate) fn load(path: &Path, lock: &[u8; 32], inputs: usize, outputs: usize) -> Option<OnDisk> {
    let (file, len) = crate::disk::open_cache_file(path, max_size())?;
    OnDisk::read(file, len).filter(|r| r.is_for(lock, inputs, outputs))
}

/// The record at `path`, whichever lock it is for, if there is a whole one, read as a
/// write reads it ([`OnDisk`]).
pub(crate) fn load_on_disk(path: &Path) -> Option<OnDisk> {
    let (file, len) = crate::disk::open_cache_file(path, max_size())?;
    OnDisk::read(file, len)
}

/// The time in the header of the record at `path`, without reading the rest (nor checking
/// it: for a caller that only declines what the record could vouch for).
pub(crate) fn time_at(path: &Path) -> Option<Time> {
    use std::os::unix::fs::FileExt;
    let (file, len) = crate::disk::open_cache_file(path, max_size())?;
    let mut header = [0; HEADER];
    (len >= HEADER).then_some(())?;
    file.read_exact_at(&mut header, 0).ok()?;
    (&header[..16] == MAGIC).then(|| time_of(&header))
}

/// The record at `path`, whichever lock it is for, if there is a whole one (its pages
/// mapped).
pub(crate) fn load_any(path: &Path) -> Option<Record> {
    let (file, len) = crate::disk::open_cache_file(path, max_size())?;
    Record::map(&file, len)
}

/// A record's header: for the lock `lock`, stamped `time`, with these counts of entries
/// and no copy of the lock.
fn header(lock: [u8; 32], time: Time, inputs: usize, outputs: usize, dirs: usize) -> [u8; HEADER] {
    let mut h = [0; HEADER];
    let fields: [&[u8]; 8] = [
        MAGIC,
        &lock,
        &time.0.to_le_bytes(),
        &time.1.to_le_bytes(),
        &(inputs as u32).to_le_bytes(),
        &(outputs as u32).to_le_bytes(),
        &(dirs as u32).to_le_bytes(),
        &0u32.to_le_bytes(),
    ];
    let mut at = 0;
    for f in fields {
        h[at..at + f.len()].copy_from_slice(f);
        at += f.len();
    }
    h
}

/// The stamps of `parents` (the directories holding the outputs' directories; see
/// [`crate::disk::parents_of_directories`]; `None` for one that is not a real directory),
/// and those of them whose entries the `previous` record vouches for: its stamp is the
/// recorded one, older than the record, and the directory is reached without following
/// a symlink (it is directly in `out`, entered without following it, or its parent's
/// entries are vouched for too). Their subdirectories are then real directories without
/// an `lstat` each: each was seen real when the record was made (a record holds a
/// directory's stamp only if every output's directories were looked at after it was
/// taken), and an entry cannot be added, removed or replaced without changing its
/// directory's `mtime` and `ctime`. The stamps are taken before any subdirectory is
/// looked at, so a change from then on shows in the next record.
pub(crate) fn trusted_directories<S: Stamps>(
    walk: &crate::disk::Walk,
    parents: &[&str],
    previous: Option<&S>,
) -> (Vec<Option<Stamp>>, std::sync::Arc<[String]>) {
    let previous = previous.filter(|r| r.dirs() == parents.len());
    let mut trusted: Vec<String> = Vec::new();
    let mut stamps = Vec::with_capacity(parents.len());
    for (i, dir) in parents.iter().enumerate() {
        let stamp = walk.stat_directory(dir).map(|st| Stamp::of_stat(&st));
        stamps.push(stamp);
        let Some(stamp) = stamp else { continue };
        // `stat_directory` looks at `dir` from `out` without following its last
        // component: one directly in `out` is real by its own `lstat`.
        let reached = match dir.rsplit_once('/') {
            None => true,
            Some((above, _)) => trusted.binary_search_by(|t| t.as_str().cmp(above)).is_ok(),
        };
        if reached && previous.is_some_and(|r| r.vouches_dir(i, &stamp)) {
            trusted.push((*dir).to_string());
        }
    }
    (stamps, trusted.into())
}

/// How many output entries [`store_filled`] fills and writes at a time (456 KB).
const FILLED_PART: usize = 8192;

/// What a record [`store_filled`] writes has entries for: `inputs.0` inputs stamped as
/// `inputs.1` says (in order; those it does not say are not recorded), `outputs` outputs
/// (stamped as they are filled), and the directories stamped as `dirs` says.
#[derive(Clone, Copy)]
pub(crate) struct Sections<'s> {
    pub inputs: (usize, &'s [Option<Stamp>]),
    pub outputs: usize,
    pub dirs: &'s [Option<Stamp>],
    /// The lock's stamp and its copy (see `lock::copy_of`: its length, and what writes
    /// it), which the next compile and check read instead of the lock while the lock is
    /// stamped so; `None`: the lock's entry is left for a check to stamp.
    pub lock: Option<(Stamp, usize, crate::artifact::Maker<'s>)>,
}

/// Writes to `path` atomically the record [`Record::new`] makes for a lock with
/// `sections`, its output entries filled by `fill`, which is given each part of them in
/// turn (which outputs, and their entries): the record is written as it is filled, never
/// held whole (5 MB at 30,000 agent ids). Failures are ignored, as [`store`]'s are.
pub(crate) fn store_filled(
    path: &Path,
    lock: [u8; 32],
    time: Time,
    sections: Sections<'_>,
    fill: impl FnMut(std::ops::Range<usize>, &mut [u8]),
) {
    let _ = crate::disk::replace_cache_file(path, |f| write_filled(f, lock, time, sections, FILLED_PART, fill));
}

/// What writes a run of a record's entries (which, and their bytes).
type Filler<'f> = &'f mut dyn FnMut(std::ops::Range<usize>, &mut [u8]);

fn write_filled(
    f: &mut impl std::io::Write,
    lock: [u8; 32],
    time: Time,
    Sections { inputs: (inputs, stamps), outputs, dirs, lock: copy }: Sections<'_>,
    part: usize,
    mut fill: impl FnMut(std::ops::Range<usize>, &mut [u8]),
) -> std::io::Result<()> {
    let copy = copy.filter(|&(_, len, _)| len <= MAX_COPY);
    let mut f = Checked::new(f);
    let mut h = header(lock, time, inputs, outputs, dirs.len());
    h[76..80].copy_from_slice(&(copy.map_or(0, |(_, len, _)| len) as u32).to_le_bytes());
    f.write_all(&h)?;
    let part = part.clamp(1, inputs.max(outputs).max(dirs.len()).max(1));
    let mut buf = vec![0; part * ENTRY];
    // Entries in the order `Record::new` lays them out: the inputs' (as they were read),
    // the outputs' (by `fill`), the directories', the lock's (left for the next check to
    // stamp).
    let from = |stamps: &[Option<Stamp>], run: std::ops::Range<usize>, entries: &mut [u8]| {
        for (i, e) in run.zip(entries.chunks_exact_mut(ENTRY)) {
            put_entry(e, stamps.get(i).copied().flatten());
        }
    };
    let mut stamped = |run, entries: &mut [u8]| from(stamps, run, entries);
    let mut directories = |run, entries: &mut [u8]| from(dirs, run, entries);
    let lock_stamp = [copy.map(|(stamp, _, _)| stamp)];
    let mut the_lock = |run, entries: &mut [u8]| from(&lock_stamp, run, entries);
    let sections: [(usize, Filler<'_>); 4] =
        [(inputs, &mut stamped), (outputs, &mut fill), (dirs.len(), &mut directories), (1, &mut the_lock)];
    for (n, filled) in sections {
        let mut start = 0;
        while start < n {
            let run = start..n.min(start + part);
            let b = &mut buf[..run.len() * ENTRY];
            b.fill(0);
            start = run.end;
            filled(run, b);
            f.write_all(b)?;
        }
    }
    if let Some((_, len, write)) = copy {
        let before = f.len;
        // It comes in small pieces (three a path).
        let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut f);
        write(&mut buffered)?;
        buffered.flush()?;
        drop(buffered);
        if f.len - before != len {
            return Err(std::io::Error::other("the lock's copy is not the length it was said to be"));
        }
    }
    let sum = f.crc.finalize();
    f.inner.write_all(&sum.to_le_bytes())
}

/// Writes `record` to `path` atomically. Failures are ignored: the record only ever saves
/// work.
pub(crate) fn store(path: &Path, record: &Record) {
    // Its bytes, then their checksum: not joined in a copy (5 MB at 30,000 agent ids).
    let _ = crate::disk::replace_cache_file(path, |f| {
        std::io::Write::write_all(f, record.buf.get())?;
        std::io::Write::write_all(f, &record.checksum())
    });
}

/// Writes `stamp` (or "nothing recorded") into `e`, one entry of a record.
pub(crate) fn put_entry(e: &mut [u8], stamp: Option<Stamp>) {
    e.fill(0);
    if let Some(s) = stamp {
        e[0] = 1;
        let numbers = [s.dev, s.ino, s.size, s.mtime.0 as u64, s.mtime.1 as u64, s.ctime.0 as u64, s.ctime.1 as u64];
        for (k, n) in numbers.iter().enumerate() {
            e[1 + k * 8..9 + k * 8].copy_from_slice(&n.to_le_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(ino: u64) -> Stamp {
        Stamp { dev: 7, ino, size: 10, mtime: (100, 5), ctime: (100, 9) }
    }

    fn record() -> Record {
        let mut r = Record::new([3; 32], (200, 0), 2, 3, 2);
        r.set_input(0, Some(stamp(1)));
        r.set_output(1, Some(stamp(2)));
        r.set_output(2, Some(Stamp { mtime: (-1, 999_999_999), ..stamp(3) }));
        r.set_dir(1, Some(stamp(6)));
        r.set_copy(stamp(4), b"lock");
        r
    }

    /// A record written a part at a time, as it is stamped, is byte for byte the one made
    /// whole and written at once, whatever the parts, its inputs' stamps included (those
    /// given; an input past them is not recorded).
    #[test]
    fn a_record_written_as_it_is_filled_is_the_one_made_whole() {
        let cases = [(0, 0, 0, 4), (3, 1, 2, 4), (2, 9, 0, 4), (5, 8, 3, 4), (1, 100, 9, 8192), (0, 7, 1, 1), (4, 0, 5, 2), (9, 3, 0, 2)];
        for (inputs, outputs, dirs, part) in cases {
            let stamp_of = |i: usize| (!i.is_multiple_of(3)).then(|| stamp(i as u64 + 1));
            let input_stamps: Vec<Option<Stamp>> = (0..inputs.min(7)).map(|i| (i % 2 == 0).then(|| stamp(i as u64 + 50))).collect();
            let dir_stamps: Vec<Option<Stamp>> = (0..dirs).map(|i| (i != 1).then(|| stamp(i as u64 + 90))).collect();
            let mut whole = Record::new([7; 32], (5, 6), inputs, outputs, dirs);
            for (i, s) in input_stamps.iter().enumerate() {
                whole.set_input(i, *s);
            }
            for (i, s) in dir_stamps.iter().enumerate() {
                whole.set_dir(i, *s);
            }
            for i in 0..outputs {
                whole.set_output(i, stamp_of(i));
            }
            let (mut written, mut runs) = (Vec::new(), Vec::new());
            let sections = Sections { inputs: (inputs, &input_stamps), outputs, dirs: &dir_stamps, lock: None };
            write_filled(&mut written, [7; 32], (5, 6), sections, part, |run, entries| {
                runs.push(run.clone());
                for (i, e) in run.zip(entries.chunks_exact_mut(ENTRY)) {
                    put_entry(e, stamp_of(i));
                }
            })
            .unwrap();
            assert_eq!(written, whole.encode(), "{inputs} {outputs} {part}");
            assert_eq!(runs.iter().flat_map(Clone::clone).collect::<Vec<_>>(), (0..outputs).collect::<Vec<_>>());
            assert!(runs.iter().all(|r| r.len() <= part));
            assert_eq!(Record::decode(written), Some(whole));
        }
    }

    #[test]
    fn round_trip_and_binding() {
        let r = record();
        let b = r.encode();
        assert_eq!(b.len(), size(2, 3, 2, 4).unwrap());
        let back = Record::decode(b.clone()).unwrap();
        assert_eq!(back, r);
        assert!(back.is_for(&[3; 32], 2, 3));
        assert!(!back.is_for(&[4; 32], 2, 3), "another lock");
        assert!(!back.is_for(&[3; 32], 3, 2), "other counts");
        assert_eq!(Record::decode(b[..b.len() - 1].to_vec()), None, "truncated");
        for at in [0, 20, 50, 70, 74, 78, HEADER, HEADER + 3, b.len() - 6, b.len() - 1] {
            let mut bad = b.clone();
            bad[at] ^= 1;
            assert_eq!(Record::decode(bad), None, "a flipped bit at {at}");
        }
        assert_eq!(Record::decode(vec![0; 400]), None);
        let mut bare = Record::new([3; 32], (200, 0), 2, 3, 2);
        bare.set_output(2, Some(stamp(9)));
        assert_eq!(Record::decode(bare.encode()), Some(bare.clone()), "no copy");
        assert_eq!(bare.copy_for(&stamp(4)), None);
        let mut tagged = bare.encode();
        tagged[HEADER + 6 * ENTRY] = 2;
        let n = tagged.len() - TRAILER;
        let sum = crc32fast::hash(&tagged[..n]).to_le_bytes();
        tagged[n..].copy_from_slice(&sum);
        assert_eq!(Record::decode(tagged), None, "an unknown tag");
    }

    /// What a record says: its counts, its time and every entry, the lock's too.
    fn says(r: &impl Stamps) -> ((usize, usize, usize), Time, Vec<Option<Stamp>>) {
        let (inputs, outputs, dirs) = r.counts();
        (r.counts(), r.time(), (0..=inputs + outputs + dirs).map(|n| r.entry(n)).collect())
    }

    /// A write's record, read from disk a block at a time, says what the record stored
    /// says, however many blocks it takes; an entry of an unknown tag vouches for nothing.
    #[test]
    fn a_record_read_a_block_at_a_time_says_what_it_was_stored_saying() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("record");
        let outputs = 5 * BLOCK + 3;
        let mut r = Record::new([3; 32], (200, 0), 2, outputs, 2);
        for i in (0..outputs).step_by(3) {
            r.set_output(i, Some(stamp(i as u64)));
        }
        r.set_dir(1, Some(stamp(6)));
        r.set_copy(stamp(4), &[7; 1000]);
        store(&at, &r);
        let loaded = load(&at, &[3; 32], 2, outputs).unwrap();
        assert_eq!(says(&loaded), says(&r));
        // Backwards, so every block is read again past the few kept.
        for i in (0..outputs).rev() {
            assert_eq!(loaded.output(i), r.output(i), "{i}");
            assert_eq!(loaded.vouches_output(i, &stamp(i as u64)), i % 3 == 0, "{i}");
        }
        assert!(loaded.vouches_dir(1, &stamp(6)) && !loaded.vouches_dir(0, &stamp(6)));
        let mut bytes = std::fs::read(&at).unwrap();
        bytes[HEADER + (2 + 3) * ENTRY] = 2;
        let n = bytes.len() - TRAILER;
        let sum = crc32fast::hash(&bytes[..n]).to_le_bytes();
        bytes[n..].copy_from_slice(&sum);
        std::fs::write(&at, &bytes).unwrap();
        let tagged = load(&at, &[3; 32], 2, outputs).unwrap();
        assert_eq!(tagged.output(3), None, "an unknown tag");
        assert_eq!(tagged.output(6), r.output(6));
    }

    #[test]
    fn a_write_loads_a_record_without_its_copy_yet_checks_the_copys_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("record");
        for copy in [&b"lock"[..], &vec![7; 200_000][..]] {
            let mut r = record();
            r.set_copy(stamp(4), copy);
            store(&at, &r);
            let loaded = load(&at, &[3; 32], 2, 3).unwrap();
            assert_eq!(says(&loaded), says(&r), "the stamps, the lock's included");
            assert_eq!(load_any(&at), Some(r), "a check keeps the copy");
            assert!(load(&at, &[4; 32], 2, 3).is_none(), "another lock");
            let mut bytes = std::fs::read(&at).unwrap();
            let last_of_copy = bytes.len() - TRAILER - 1;
            bytes[last_of_copy] ^= 1;
            std::fs::write(&at, &bytes).unwrap();
            assert!(load(&at, &[3; 32], 2, 3).is_none(), "a flipped bit in the copy");
            bytes[last_of_copy] ^= 1;
            bytes.push(0);
            std::fs::write(&at, &bytes).unwrap();
            assert!(load(&at, &[3; 32], 2, 3).is_none(), "a byte after the checksum");
        }
    }

    #[test]
    fn the_copy_only_for_the_same_older_lock() {
        let r = record();
        assert_eq!(r.copy_for(&stamp(4)), Some(&b"lock"[..]));
        assert_eq!(r.copy_for(&Stamp { size: 11, ..stamp(4) }), None, "the lock changed");
        assert_eq!(r.copy_for(&stamp(5)), None, "another file");
        let mut racy = Record::new([3; 32], (100, 9), 2, 3, 2);
        racy.set_copy(stamp(4), b"lock");
        assert_eq!(racy.copy_for(&stamp(4)), None, "changed in the record's tick");
        let mut replaced = record();
        replaced.set_copy(stamp(5), b"other");
        assert_eq!(replaced.copy_for(&stamp(5)), Some(&b"other"[..]));
        assert_eq!(Record::decode(replaced.encode()), Some(replaced));
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
        assert!(r.vouches_dir(1, &stamp(6)) && !r.vouches_dir(0, &stamp(6)) && !r.vouches_dir(2, &stamp(6)));
        assert!(!r.vouches_output(3, &stamp(6)), "a directory's stamp is not an output's");
        // Racy: changed at or after the record's time.
        let mut late = Record::new([3; 32], (100, 9), 0, 1, 0);
        late.set_output(0, Some(stamp(2)));
        assert!(!late.vouches_output(0, &stamp(2)), "ctime equal to the record's time");
        let mut future = Record::new([3; 32], (200, 0), 0, 1, 0);
        future.set_output(0, Some(Stamp { mtime: (300, 0), ..stamp(2) }));
        assert!(!future.vouches_output(0, &Stamp { mtime: (300, 0), ..stamp(2) }), "mtime after the record's time");
    }

    #[test]
    fn stored_beside_and_never_inside_out_or_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("repo/out");
        std::fs::create_dir_all(&out).unwrap();
        let repo = dir.path().join("repo").canonicalize().unwrap();
        let cache = dir.path().join("cache/check/v1");
        let p = crate::disk::cache_path(&cache, &out, &[&repo]).unwrap();
        assert!(p.starts_with(dir.path().canonicalize().unwrap().join("cache/check/v1")));
        assert_eq!(crate::disk::cache_path(&out.join("cache"), &out, &[]), None, "inside --out");
        assert_eq!(crate::disk::cache_path(&repo.join(".cache"), &out, &[&repo]), None, "inside the input root");
        assert_eq!(crate::disk::cache_path(Path::new("rel"), &out, &[]), None, "relative");
        let r = record();
        store(&p, &r);
        assert_eq!(load(&p, &[3; 32], 2, 3).map(|l| says(&l)), Some(says(&r)));
        assert!(load(&p, &[3; 32], 2, 4).is_none());
        assert_eq!(load_any(&p), Some(r.clone()));
        // A symlink where the record goes is neither read through nor written through.
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, r.encode()).unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&target, &p).unwrap();
        assert!(load(&p, &[3; 32], 2, 3).is_none());
        store(&p, &Record::new([3; 32], (1, 0), 2, 3, 0));
        assert!(!p.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), r.encode(), "the link's target is untouched");
    }

    /// A check maps the record's file: only a whole one is taken, and changing what was
    /// mapped changes a copy, never the file.
    #[test]
    fn a_mapped_record_is_taken_only_whole_and_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("record");
        let r = record();
        let b = r.encode();
        let mut grown = b.clone();
        grown.push(0);
        let mut flipped = b.clone();
        flipped[HEADER + ENTRY + 3] ^= 1;
        for (bad, why) in [(&b[..0], "empty"), (&b[..b.len() - 1], "truncated"), (&grown[..], "grown"), (&flipped[..], "a flipped bit")] {
            std::fs::write(&at, bad).unwrap();
            assert_eq!(load_any(&at), None, "{why}");
        }
        std::fs::write(&at, &b).unwrap();
        let mut mapped = load_any(&at).unwrap();
        assert!(matches!(mapped.buf, Bytes::Mapped(_)));
        assert_eq!(mapped, r);
        mapped.set_output(0, Some(stamp(77)));
        assert!(matches!(mapped.buf, Bytes::Made(_)));
        assert_eq!(mapped.output(0), Some(stamp(77)));
        assert_eq!(std::fs::read(&at).unwrap(), b, "the file is as it was");
        assert_eq!(load_any(&at), Some(r));
    }

    #[test]
    fn a_fifo_or_a_directory_where_a_cache_file_goes_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("record");
        crate::disk::mkfifo(&fifo);
        // Were it opened blocking, these would wait for a writer forever.
        assert!(load(&fifo, &[3; 32], 2, 3).is_none());
        assert_eq!(load_any(&fifo), None);
        assert!(crate::disk::open_cache_file(&fifo, 1 << 20).is_none(), "the memo's open");
        assert_eq!(load_any(dir.path()), None, "a directory");
        assert!(crate::disk::open_cache_file(dir.path(), 1 << 20).is_none());
    }
}
