//! The output directory as clawc finds it, which is untrusted: in CI the committed tree
//! comes from the pull request, so any entry may be a symlink to `/proc/self/environ`, a
//! FIFO, a device or a directory where clawc expects one of its files.
//!
//! Every look goes component by component with `lstat` from the output directory, never
//! following a symlink; files are opened with `O_NOFOLLOW | O_NONBLOCK` (a FIFO cannot
//! block the open), checked to be regular on the open descriptor, and read through a
//! bounded reader. What is not a regular file is reported by its kind and never read.

use std::fs::{self, File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Largest input file clawc reads (pods, descriptors, skills, Dockerfiles, and a file in
/// an image).
pub(crate) const MAX_INPUT_BYTES: u64 = 8 * 1024 * 1024;
/// Largest bookkeeping file clawc reads from `--out` (`clawc.lock`, a journal, an older
/// clawc's manifest).
pub(crate) const MAX_BOOKKEEPING: u64 = 64 << 20;
/// Largest compiled file clawc reads back from `--out` to compare, hash or show.
pub(crate) const MAX_OUTPUT: u64 = 256 << 20;

/// What kind of entry sits where clawc expected a regular file or a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Directory,
    Symlink,
    Fifo,
    Socket,
    Device,
}

impl Kind {
    pub(crate) fn of(meta: &Metadata) -> Kind {
        let t = meta.file_type();
        if t.is_symlink() {
            Kind::Symlink
        } else if t.is_dir() {
            Kind::Directory
        } else if t.is_fifo() {
            Kind::Fifo
        } else if t.is_socket() {
            Kind::Socket
        } else if t.is_block_device() || t.is_char_device() {
            Kind::Device
        } else {
            Kind::File
        }
    }

    /// "a symlink", "a directory", … (for messages and the `--check` report).
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Kind::File => "a file",
            Kind::Directory => "a directory",
            Kind::Symlink => "a symlink",
            Kind::Fifo => "a FIFO",
            Kind::Socket => "a socket",
            Kind::Device => "a device",
        }
    }
}

/// An entry of the output tree, looked at without following anything.
#[derive(Debug)]
pub(crate) enum Found {
    Missing,
    /// A regular file (its `lstat`).
    File(Metadata),
    /// Something that is not a regular file at the path itself.
    Other(Kind),
    /// A component on the way (`at`, output-relative) is not a directory.
    Blocked {
        at: String,
        kind: Kind,
    },
}

/// The contents of an entry, read without following anything.
#[derive(Debug)]
pub(crate) enum Contents {
    Missing,
    Bytes(Vec<u8>),
    /// A regular file larger than the limit: not read.
    TooLarge(u64),
    /// Not a regular file (or blocked on the way): never read.
    Foreign {
        at: String,
        kind: Kind,
    },
}

/// Whether `p` is a `/`-separated relative path of plain names: no empty, `.` or `..`
/// component, no leading `/`, no NUL or backslash. Only such paths are joined onto `--out`.
///
/// Byte scans only: `--check` asks it of every output it looks at (9,301 for the
/// 3,000-agent pod). A path that passes has only `Component::Normal` components (a
/// leading `/` would make an empty first name), which the unit test checks.
pub(crate) fn is_safe_relative(p: &str) -> bool {
    let plain = |c: &[u8]| !c.is_empty() && c != b"." && c != b"..";
    !p.is_empty() && !p.bytes().any(|b| b == 0 || b == b'\\') && p.as_bytes().split(|&b| b == b'/').all(plain)
}

/// What `out` itself is when it exists and is not a real directory (a symlinked output
/// directory is never read or written through).
pub(crate) fn not_a_directory(out: &Path) -> Option<Kind> {
    fs::symlink_metadata(out).ok().map(|m| Kind::of(&m)).filter(|k| *k != Kind::Directory)
}

/// Directories of one output tree already seen to be real directories (so a walk over
/// thousands of files looks at each shared directory once). Only valid while nothing else
/// changes the tree, i.e. within one plan or one check.
#[derive(Debug, Default)]
pub(crate) struct Dirs {
    /// Real directories.
    seen: std::collections::HashSet<String>,
    /// Directories found missing: nothing under them exists either (a fresh tree is
    /// looked at once per directory, not once per file).
    missing: std::collections::HashSet<String>,
}

/// Looks at `out/rel` (`rel` must be [`is_safe_relative`]) one component at a time,
/// skipping the directories `dirs` already vouches for (and adding those it sees).
pub(crate) fn inspect_in(out: &Path, rel: &str, dirs: &mut Dirs) -> io::Result<Found> {
    let parts: Vec<&str> = rel.split('/').collect();
    let mut path = out.to_path_buf();
    for (i, part) in parts.iter().enumerate() {
        path.push(part);
        let is_last = i + 1 == parts.len();
        if !is_last {
            let dir = parts[..=i].join("/");
            if dirs.missing.contains(&dir) {
                return Ok(Found::Missing);
            }
            if dirs.seen.contains(&dir) {
                continue;
            }
        }
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                if !is_last && e.kind() == io::ErrorKind::NotFound {
                    dirs.missing.insert(parts[..=i].join("/"));
                }
                return Ok(Found::Missing);
            }
            Err(e) => return Err(e),
        };
        let kind = Kind::of(&meta);
        if is_last {
            return Ok(if kind == Kind::File { Found::File(meta) } else { Found::Other(kind) });
        }
        if kind != Kind::Directory {
            return Ok(Found::Blocked { at: parts[..=i].join("/"), kind });
        }
        dirs.seen.insert(parts[..=i].join("/"));
    }
    Ok(Found::Missing)
}

/// Reads `out/rel` if it is a regular file of at most `limit` bytes.
pub(crate) fn read(out: &Path, rel: &str, limit: u64) -> io::Result<Contents> {
    read_in(out, rel, limit, &mut Dirs::default())
}

/// [`read`] with the directories already seen (see [`Dirs`]).
pub(crate) fn read_in(out: &Path, rel: &str, limit: u64, dirs: &mut Dirs) -> io::Result<Contents> {
    read_meta_in(out, rel, limit, dirs).map(|(c, _)| c)
}

fn read_meta_in(out: &Path, rel: &str, limit: u64, dirs: &mut Dirs) -> io::Result<(Contents, Option<Metadata>)> {
    match open_meta_in(out, rel, limit, u64::MAX, dirs)? {
        (Opened::Read(contents), meta) => Ok((contents, meta)),
        // (No file is longer than `u64::MAX` bytes.)
        (Opened::File(_), _) => Ok((Contents::TooLarge(u64::MAX), None)),
    }
}

/// [`read_meta_or_open`], its directories looked at through `dirs`.
fn open_meta_in(out: &Path, rel: &str, limit: u64, hold: u64, dirs: &mut Dirs) -> io::Result<(Opened, Option<Metadata>)> {
    let found = match inspect_in(out, rel, dirs)? {
        Found::Missing => Contents::Missing,
        Found::Blocked { at, kind } => Contents::Foreign { at, kind },
        Found::Other(kind) => Contents::Foreign { at: rel.to_string(), kind },
        Found::File(_) => match open_bounded(&out.join(rel), limit, rel)? {
            Ok((file, meta)) if meta.len() > hold => return Ok((Opened::File(file), Some(meta))),
            Ok((file, meta)) => return read_opened(&file, meta, limit).map(|(c, m)| (Opened::Read(c), m)),
            Err(found) => found,
        },
    };
    Ok((Opened::Read(found), None))
}

/// Opens `path` without following a final symlink or blocking on a FIFO, and reads it if
/// the open descriptor is a regular file of at most `limit` bytes.
pub(crate) fn read_regular(path: &Path, limit: u64, rel: &str) -> io::Result<Contents> {
    read_regular_meta(path, limit, rel).map(|(c, _)| c)
}

/// [`read_regular`], with the `fstat` of the descriptor the bytes were read from (when a
/// regular file was opened): the identity of exactly what was read, for the stat record.
pub(crate) fn read_regular_meta(path: &Path, limit: u64, rel: &str) -> io::Result<(Contents, Option<Metadata>)> {
    match open_bounded(path, limit, rel)? {
        Ok((file, meta)) => read_opened(&file, meta, limit),
        Err(found) => Ok((found, None)),
    }
}

/// What [`read_meta_or_open`] found: what [`read`] would have, or a file too long to
/// hold, opened to be read as a stream.
pub(crate) enum Opened {
    Read(Contents),
    File(File),
}

/// [`read`], with the `fstat` of what was read (see [`read_regular_meta`]); but a regular
/// file longer than `hold` bytes (and at most `limit`) is opened and handed back unread,
/// with its `fstat`.
pub(crate) fn read_meta_or_open(out: &Path, rel: &str, limit: u64, hold: u64) -> io::Result<(Opened, Option<Metadata>)> {
    open_meta_in(out, rel, limit, hold, &mut Dirs::default())
}

/// `path` opened without following a final symlink or blocking on a FIFO, if it is a
/// regular file of at most `limit` bytes, with its `fstat`; else what was found there.
fn open_bounded(path: &Path, limit: u64, rel: &str) -> io::Result<Result<(File, Metadata), Contents>> {
    let file = match open(path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Err(Contents::Missing)),
        // ELOOP: the final component became a symlink.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(Err(Contents::Foreign { at: rel.to_string(), kind: Kind::Symlink })),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    let kind = Kind::of(&meta);
    if kind != Kind::File {
        return Ok(Err(Contents::Foreign { at: rel.to_string(), kind }));
    }
    if meta.len() > limit {
        return Ok(Err(Contents::TooLarge(meta.len())));
    }
    Ok(Ok((file, meta)))
}

/// The bytes of `file` (opened by [`open_bounded`], whose `fstat` is `meta`), at most
/// `limit` of them.
fn read_opened(file: &File, meta: Metadata, limit: u64) -> io::Result<(Contents, Option<Metadata>)> {
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok((Contents::TooLarge(bytes.len() as u64), None));
    }
    Ok((Contents::Bytes(bytes), Some(meta)))
}

/// A look at the files of one tree in path order, as `--check` does thousands of times.
/// Only plain regular files reached through real directories count; anything else is
/// `None`.
///
/// A read opens each directory once, relative to its parent (`O_PATH | O_DIRECTORY |
/// O_NOFOLLOW`: a symlink or anything else where a directory belongs is not entered), and
/// the file relative to its directory without following it. A [`Walk::stat`] opens
/// nothing: each directory is `lstat`ed once (it must be a directory, not a symlink to
/// one), then the file is `lstat`ed by its path from the root. Opening and closing a
/// directory costs more than its `lstat` and the extra path components of the files in
/// it (measured: 9,301 outputs, 3,002 directories; see `docs/performance.md`). A walk
/// [`Walk::trusting`] some directories does not `lstat` the ones directly in them.
pub(crate) struct Walk {
    root: std::os::fd::OwnedFd,
    /// The directories of the last path read, outermost first.
    open: Vec<(String, std::os::fd::OwnedFd)>,
    /// The directory of the last path [`Walk::stat`] looked at, every component of which
    /// was `lstat`ed and found a directory.
    checked: String,
    /// Directories (sorted) whose entries are known unchanged since each was seen to be a
    /// real directory ([`Walk::trusting`]): their subdirectories are not `lstat`ed.
    trusted: std::sync::Arc<[String]>,
}

/// The directories whose entries hold the directories on the way to `files` (best in
/// sorted order), outermost first: `""` (the root) and `context` for
/// `context/<agent>/tools.json`. Their stamps let a check take the directories below them
/// as real without an `lstat` each (see [`Walk::trusting`]). A file whose directory is not
/// [`is_safe_relative`] adds none (it is judged once per run of files sharing it).
pub(crate) fn parents_of_directories<'a>(files: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut parents = std::collections::BTreeSet::new();
    let mut last = None;
    for file in files {
        let dir = file.rsplit_once('/').map_or("", |(d, _)| d);
        if last == Some(dir) {
            continue;
        }
        last = Some(dir);
        if !dir.is_empty() && !is_safe_relative(dir) {
            continue;
        }
        let mut d = dir;
        // Going up stops at a parent already there: its own parents are too.
        while !d.is_empty() {
            let parent = d.rsplit_once('/').map_or("", |(p, _)| p);
            if !parents.insert(parent) {
                break;
            }
            d = parent;
        }
    }
    parents.into_iter().collect()
}

impl Walk {
    /// A walk of `out`, which must be a real directory (not a symlink).
    pub(crate) fn new(out: &Path) -> io::Result<Walk> {
        use rustix::fs::{CWD, Mode, OFlags, openat};
        let root = openat(CWD, out, OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Walk { root, open: Vec::new(), checked: String::new(), trusted: std::sync::Arc::new([]) })
    }

    /// The same walk, taking every directory directly in one of `trusted` (sorted) as
    /// real without an `lstat`. Only for directories whose entries cannot have changed
    /// since each was seen real, with every directory above it: a stat record vouches for
    /// the directory's stamp, and an entry cannot be added, removed, renamed or replaced
    /// without changing its directory's `mtime` and `ctime` (see `lock::replay`).
    pub(crate) fn trusting(self, trusted: std::sync::Arc<[String]>) -> Walk {
        Walk { trusted, ..self }
    }

    /// The `lstat` of the directory `dir` (a path from the root; `""` is the root) if it is
    /// a directory, not a symlink to one.
    pub(crate) fn stat_directory(&self, dir: &str) -> Option<rustix::fs::Stat> {
        use rustix::fs::{AtFlags, FileType, statat};
        let st = statat(&self.root, if dir.is_empty() { "." } else { dir }, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        (FileType::from_raw_mode(st.st_mode) == FileType::Directory).then_some(st)
    }

    /// The directory holding `rel` (which must be [`is_safe_relative`]) and `rel`'s last
    /// component; `None` when a directory on the way is missing or is not a directory.
    fn parent<'r>(&mut self, rel: &'r str) -> Option<(std::os::fd::BorrowedFd<'_>, &'r str)> {
        use rustix::fs::{Mode, OFlags, openat};
        use std::os::fd::AsFd;
        let (dirs, name) = rel.rsplit_once('/').map_or((None, rel), |(d, n)| (Some(d), n));
        let dirs: Vec<&str> = dirs.map(|d| d.split('/').collect()).unwrap_or_default();
        let same = self.open.iter().zip(&dirs).take_while(|((a, _), b)| a == *b).count();
        self.open.truncate(same);
        for d in &dirs[same..] {
            let parent = self.open.last().map_or(self.root.as_fd(), |(_, fd)| fd.as_fd());
            let fd = openat(parent, *d, OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()).ok()?;
            self.open.push(((*d).to_string(), fd));
        }
        Some((self.open.last().map_or(self.root.as_fd(), |(_, fd)| fd.as_fd()), name))
    }

    /// The `lstat` of `out/rel` (which must be [`is_safe_relative`]) if it is a regular
    /// file reached through real directories.
    ///
    /// A directory replaced by a symlink between its `lstat` and the file's would be
    /// followed by the second; that can only show the metadata of a file elsewhere, never
    /// its bytes (reads go through [`Walk::read`]), and a stat record vouches only for the
    /// device and inode it recorded, the file it hashed.
    pub(crate) fn stat(&mut self, rel: &str) -> Option<rustix::fs::Stat> {
        use rustix::fs::{AtFlags, FileType, statat};
        let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
        if !self.real_directories(dir) {
            return None;
        }
        let st = statat(&self.root, rel, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile).then_some(st)
    }

    /// Whether every component of `dir` (a path from the root; `""` is the root) is a
    /// directory, not a symlink: `lstat`s those not already checked by the last call.
    fn real_directories(&mut self, dir: &str) -> bool {
        // Outputs come in path order: most share the last one's directory.
        if dir == self.checked {
            return true;
        }
        let known = |end: usize| self.checked.len() >= end && self.checked.as_bytes().get(end).is_none_or(|&b| b == b'/');
        let mut ends = dir.match_indices('/').map(|(i, _)| i).chain((!dir.is_empty()).then_some(dir.len()));
        let trusted = |end: usize| {
            let parent = dir[..end].rsplit_once('/').map_or("", |(p, _)| p);
            self.trusted.binary_search_by(|t| t.as_str().cmp(parent)).is_ok()
        };
        let ok = ends.all(|end| {
            (known(end) && self.checked.as_bytes()[..end] == dir.as_bytes()[..end])
                || trusted(end)
                || self.stat_directory(&dir[..end]).is_some()
        });
        self.checked.clear();
        if ok {
            self.checked.push_str(dir);
        }
        ok
    }

    /// The bytes of `out/rel` and the `fstat` of what was read, if it is a regular file of
    /// at most `limit` bytes reached through real directories (opened `O_NOFOLLOW |
    /// O_NONBLOCK`, checked on the open descriptor, read through a bounded reader).
    pub(crate) fn read(&mut self, rel: &str, limit: u64) -> Option<(Vec<u8>, rustix::fs::Stat)> {
        use rustix::fs::{FileType, Mode, OFlags, fstat, openat};
        let (dir, name) = self.parent(rel)?;
        let fd = openat(dir, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC, Mode::empty()).ok()?;
        let st = fstat(&fd).ok()?;
        let size = u64::try_from(st.st_size).ok()?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || size > limit {
            return None;
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).ok()?);
        File::from(fd).take(limit + 1).read_to_end(&mut bytes).ok()?;
        (bytes.len() as u64 <= limit).then_some((bytes, st))
    }
}

/// The directory of clawc's machine-local caches: `$CLAWC_CACHE_DIR` when it is an
/// absolute path, else the platform's cache directory + `clawc` (`~/.cache/clawc`).
/// An empty or relative value would put the cache under whatever directory clawc runs in
/// (a repository under review), so it is ignored.
pub(crate) fn user_cache_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("CLAWC_CACHE_DIR")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::cache_dir().map(|d| d.join("clawc")))
}

/// `open(path, O_RDONLY | O_NONBLOCK)`, plus `O_NOFOLLOW` unless `follow`: a FIFO cannot
/// block the open, and a final symlink is not followed unless asked.
pub(crate) fn open(path: &Path, follow: bool) -> io::Result<File> {
    let flags = if follow { libc::O_NONBLOCK } else { libc::O_NONBLOCK | libc::O_NOFOLLOW };
    fs::OpenOptions::new().read(true).custom_flags(flags).open(path)
}

/// [`open`], refusing (as an error) anything but a regular file.
pub(crate) fn open_regular(path: &Path, follow: bool) -> io::Result<File> {
    let f = open(path, follow)?;
    match Kind::of(&f.metadata()?) {
        Kind::File => Ok(f),
        kind => Err(io::Error::other(format!("{}, not a regular file", kind.describe()))),
    }
}

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

    /// The same from a `stat` structure (outputs are looked at through a [`Walk`]).
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
    pub(crate) fn racy(&self, time: Time) -> bool {
        self.mtime >= time || self.ctime >= time
    }
}

/// Whether the file at `path` (not followed) carries a stamp at or after `time`: changed
/// then or since, as far as its times can tell ([`Stamp::racy`]). `false` when it cannot
/// be looked at.
pub(crate) fn stamped_since(path: &Path, time: Time) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| Stamp::of(&m).racy(time))
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

/// Makes a FIFO at `path`, for tests that hand one where a file is expected.
/// Where the cache file of `out` (a tree, or a pod) is kept under `dir` (a directory of
/// the user cache): named for the SHA-256 of its canonical path. `None`: `out` has no
/// canonical path, or `dir` lies inside `out` or inside one of `untrusted` (the input
/// root): a cache file there would be written by the author of what it vouches for.
pub(crate) fn cache_path(dir: &Path, out: &Path, untrusted: &[&Path]) -> Option<std::path::PathBuf> {
    let out = out.canonicalize().ok()?;
    let dir = resolved(dir)?;
    if dir.starts_with(&out) || untrusted.iter().any(|u| dir.starts_with(u)) {
        return None;
    }
    let name = crate::digest::sha256_hex(out.as_os_str().as_encoded_bytes());
    Some(dir.join(name))
}

/// `dir` with symlinks resolved as far as it exists (the rest appended as written).
fn resolved(dir: &Path) -> Option<std::path::PathBuf> {
    if !dir.is_absolute() || dir.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
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

/// The cache file at `path`, opened without following a symlink, and its length, only if
/// it is a regular file of at most `max` bytes.
pub(crate) fn open_cache_file(path: &Path, max: usize) -> Option<(std::fs::File, usize)> {
    let file = open(path, false).ok()?;
    let meta = file.metadata().ok()?;
    let len = usize::try_from(meta.len()).ok()?;
    (meta.is_file() && len <= max).then_some((file, len))
}

/// Replaces the cache file at `path` with what `write` writes, atomically: a temporary
/// file beside it (its directory made `0700` if missing), renamed over it, so a symlink
/// there is replaced, never followed.
pub(crate) fn replace_cache_file(path: &Path, write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("no parent"))?;
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700).create(dir)?;
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    write(tmp.as_file_mut())?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Replaces the cache file at `at` with `bytes` and a CRC-32 of them (as
/// [`replace_cache_file`]); nothing is written past [`MAX_BOOKKEEPING`].
pub(crate) fn store_sealed(at: &Path, bytes: &[u8]) {
    if bytes.len() as u64 + 4 > MAX_BOOKKEEPING {
        return;
    }
    let sum = crc32fast::hash(bytes).to_le_bytes();
    let _ = replace_cache_file(at, |f| {
        io::Write::write_all(f, bytes)?;
        io::Write::write_all(f, &sum)
    });
}

/// The bytes [`store_sealed`] stored at `at`, if they are whole (their CRC-32 holds) and
/// begin with `head` (a format's magic and the build they are for), without the CRC.
pub(crate) fn load_sealed(at: &Path, head: &[u8]) -> Option<Vec<u8>> {
    let (file, len) = open_cache_file(at, MAX_BOOKKEEPING as usize)?;
    let mut bytes = Vec::with_capacity(len);
    Read::read_to_end(&mut Read::take(file, len as u64), &mut bytes).ok()?;
    let body = bytes.len().checked_sub(4)?;
    let whole = crc32fast::hash(&bytes[..body]).to_le_bytes() == bytes[body..] && bytes[..body].starts_with(head);
    bytes.truncate(body);
    whole.then_some(bytes)
}

#[cfg(test)]
pub(crate) fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path, and a mode.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_relative_paths() {
        for ok in ["report.json", "context/a/skills/x.md", "a..b/c", ".hidden/.x", "..a/b.."] {
            assert!(is_safe_relative(ok), "{ok}");
            let normal = |c: std::path::Component| matches!(c, std::path::Component::Normal(_));
            assert!(Path::new(ok).components().all(normal), "{ok}");
            assert_eq!(Path::new(ok).components().count(), ok.split('/').count(), "{ok}");
        }
        for bad in ["", "/abs", "/", ".", "..", "./a", "a//b", "a/./b", "a/..", "../x", "a/", "skills/api.md/.", "a\\b", "a\0b"] {
            assert!(!is_safe_relative(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_walk_looks_only_through_real_directories() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let outside = dir.path().join("outside");
        for d in ["context/a/skills/x", "context/b/skills"] {
            fs::create_dir_all(out.join(d)).unwrap();
        }
        fs::create_dir_all(outside.join("skills")).unwrap();
        for f in ["context/a/skills/x/f", "context/a/t", "context/b/t"] {
            fs::write(out.join(f), "ok").unwrap();
        }
        fs::write(outside.join("skills/f"), "elsewhere").unwrap();
        fs::write(outside.join("t"), "elsewhere").unwrap();
        std::os::unix::fs::symlink(&outside, out.join("context/c")).unwrap();
        std::os::unix::fs::symlink(outside.join("skills"), out.join("context/b/skills/x")).unwrap();
        std::os::unix::fs::symlink(outside.join("t"), out.join("context/b/u")).unwrap();
        let mut walk = Walk::new(&out).unwrap();
        // In path order, as --check looks: each directory is judged on its own, not by a
        // sibling or cousin already seen.
        let looks =
            ["context/a/skills/x/f", "context/a/t", "context/b/skills/x/f", "context/b/t", "context/b/u", "context/c/t", "context/a/t"];
        let found: Vec<bool> = looks.iter().map(|rel| walk.stat(rel).is_some()).collect();
        assert_eq!(found, [true, true, false, true, false, false, true]);
        assert_eq!(walk.stat("context/a/t").unwrap().st_size, 2);
        assert!(walk.stat("context/missing/t").is_none());
        assert!(walk.stat("context/a/skills/x/f").is_some(), "a failed look leaves nothing wrongly checked");
    }

    #[test]
    fn the_parents_of_the_directories_on_the_way() {
        let files = ["clawc.lock", "context/a/t", "context/a/u", "context/b/skills/x/f", "report/a.json", "report.json"];
        assert_eq!(parents_of_directories(files), ["", "context", "context/b", "context/b/skills"]);
        assert_eq!(parents_of_directories(["a", "b"]), Vec::<&str>::new(), "files in the root only");
        let unsafe_dirs = ["../x/f", "a/../../f", "/etc/f", "a//b/f", "a\\b/c/f", "ok/f"];
        assert_eq!(parents_of_directories(unsafe_dirs), [""], "only ok/ counts");
        let shuffled = ["context/b/skills/x/f", "report/a.json", "context/a/t", "clawc.lock", "context/a/u"];
        assert_eq!(parents_of_directories(shuffled), ["", "context", "context/b", "context/b/skills"], "any order");
    }

    /// What `trusting` promises to skip: the `lstat` of a directory directly in a trusted
    /// one (so only directories whose entries are known unchanged may be trusted), and no
    /// other.
    #[test]
    fn a_trusting_walk_skips_only_the_lstat_of_directories_in_trusted_ones() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        fs::create_dir_all(out.join("context/a/deep")).unwrap();
        fs::create_dir_all(dir.path().join("elsewhere/deep")).unwrap();
        fs::write(out.join("context/a/t"), "ok").unwrap();
        fs::write(dir.path().join("elsewhere/deep/t"), "there").unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), out.join("context/b")).unwrap();
        let mut plain = Walk::new(&out).unwrap();
        assert!(plain.stat("context/a/t").is_some() && plain.stat("context/b/deep/t").is_none());
        assert!(plain.stat_directory("context").is_some() && plain.stat_directory("context/b").is_none());
        assert!(plain.stat_directory("").is_some(), "the root");
        let trusted: std::sync::Arc<[String]> = vec![String::new(), "context".to_string()].into();
        let mut trusting = Walk::new(&out).unwrap().trusting(trusted);
        assert!(trusting.stat("context/a/t").is_some());
        assert!(trusting.stat("context/b/deep/t").is_some(), "context/b is in a trusted directory: not looked at");
        let only_root: std::sync::Arc<[String]> = vec![String::new()].into();
        let mut rooted = Walk::new(&out).unwrap().trusting(only_root);
        assert!(rooted.stat("context/b/deep/t").is_none(), "context is not trusted: context/b is looked at");
    }

    #[test]
    fn nothing_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        fs::create_dir(&out).unwrap();
        fs::write(dir.path().join("secret"), "TOKEN").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), out.join("report.json")).unwrap();
        std::os::unix::fs::symlink(dir.path(), out.join("context")).unwrap();
        fs::create_dir(out.join("dir")).unwrap();
        assert!(matches!(read(&out, "report.json", 100).unwrap(), Contents::Foreign { kind: Kind::Symlink, .. }));
        match read(&out, "context/secret", 100).unwrap() {
            Contents::Foreign { at, kind: Kind::Symlink } => assert_eq!(at, "context"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(read(&out, "dir", 100).unwrap(), Contents::Foreign { kind: Kind::Directory, .. }));
        assert!(matches!(read(&out, "missing/x", 100).unwrap(), Contents::Missing));
        fs::write(out.join("big"), vec![b'x'; 101]).unwrap();
        assert!(matches!(read(&out, "big", 100).unwrap(), Contents::TooLarge(101)));
    }

    #[test]
    fn a_fifo_is_never_opened_for_reading() {
        let dir = tempfile::tempdir().unwrap();
        mkfifo(&dir.path().join("f"));
        assert!(matches!(read(dir.path(), "f", 100).unwrap(), Contents::Foreign { kind: Kind::Fifo, .. }));
    }
}
