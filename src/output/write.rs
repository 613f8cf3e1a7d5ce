//! Writing the compiled tree into `--out` as one transaction, on a tree that may have been
//! written by an attacker (in CI the committed tree comes from the pull request). The
//! compile hands the tree over a batch of agent services at a time ([`Writer`], a
//! [`Sink`]), so it never holds the whole tree; steps 1 and 2 run for each batch as it
//! comes, and nothing in `--out` but the staging changes before step 3.
//!
//! 1. **Validate** everything before touching anything: every output path is plain names
//!    only; no symlink, file or device sits where a directory belongs (never followed);
//!    every file clawc would replace is its own (listed in the previous `clawc.lock`) or
//!    already holds the new bytes; every stale file (after the last batch) is deleted only
//!    if it is a regular file whose hash is the one the lock records.
//! 2. **Stage** every new file at its output path under `<out>/.clawc-stage/t/`
//!    (SIGINT/SIGTERM/SIGHUP here, a compile error in a later batch, or a refused batch
//!    remove the staging and leave the old tree).
//! 3. **Commit**: write `.clawc-stage/journal.json` (renamed into place: the commit point).
//! 4. **Apply** the journal (renames, then deletes, `clawc.lock` last), then remove it. A
//!    directory the tree does not have yet is moved into place whole, with everything
//!    staged in it: a fresh compile renames a few directories, not every file.
//!
//! A run killed before 3 leaves only staging, which the next run removes; one killed
//! during 4 leaves a journal, which the next run completes. The output directory itself is
//! locked (`flock`) from the first batch to the end, so concurrent compiles into one
//! `--out` wait for each other instead of interleaving.

use super::ahead::Ahead;
use super::known::{Known, LockView, PreviousRead, Seen, capacity_for, read_previous, record_at};
use super::memo::Making;
use super::record::Stamp;
use super::sink::Sink;
use crate::artifact::{Artifact, ArtifactSet, Memo, Output, Recorded, Streamed, Taken};
use crate::diag::Diagnostic;
use crate::digest::sha256_hex;
use crate::disk::{self, Contents, Found, Kind, Opened, is_safe_relative};
use crate::lock::{LOCK, Pending};
use foldhash::{HashMap, HashMapExt};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The staging directory inside `--out`.
pub(crate) const STAGE: &str = ".clawc-stage";
/// The ownership manifest of clawc before 0.2 (ownership is now the lock's outputs).
pub(crate) const LEGACY_MANIFEST: &str = ".clawc-manifest.json";
const JOURNAL: &str = "journal.json";
/// Where in the staging each file is staged, at its output path.
const TREE: &str = "t";
/// How long a compile waits for another one writing the same `--out`.
const LOCK_WAIT: Duration = Duration::from_secs(120);

pub(crate) use crate::diag::catalogue::output as codes;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// The paths written, sorted.
    pub written: Written,
    pub unchanged: usize,
    /// Of the unchanged, those the stat record vouched for (not read).
    pub vouched: usize,
    /// Agent services whose files were taken from the tree without rendering them (their
    /// render key was unchanged: see `output::memo`).
    pub reused: usize,
    pub removed: Vec<String>,
    /// Warnings: stale files left in place because they are not what clawc wrote.
    pub warnings: Vec<Diagnostic>,
    /// `strict` and there were warnings: nothing was written.
    pub refused: bool,
}

/// A file in `--out` for what a big write keeps on disk (its lists, the memo's rendered
/// services): unnamed (`O_TMPFILE`; where the file system lacks it, made under a random
/// name and unlinked at once), so nothing is left in the tree whatever stops the compile.
fn unnamed_in(out: &Path) -> io::Result<fs::File> {
    tempfile::tempfile_in(out)
}

const TABLE_UNREADABLE: &str = "the previous lock's table of outputs could not be read back";

/// The previous lock's table of outputs, on disk, could not be read back.
fn unreadable_table() -> Diagnostic {
    spill_failed(&io::Error::other(TABLE_UNREADABLE))
}

/// The list of outputs could not be written out as a sorted run (see [`Sink::spill`]).
pub(crate) fn spill_failed(e: &io::Error) -> Diagnostic {
    Diagnostic::error(codes::IO, format!("cannot keep the list of outputs in an unnamed file in the output directory: {e}"))
        .help("check that the output directory's file system has space and allows writing")
}

fn io(what: &str, path: &Path, e: io::Error) -> Diagnostic {
    Diagnostic::error(codes::IO, format!("cannot {what} `{}`: {e}", path.display())).help("check that the output directory is writable")
}

/// The journal: what the commit does, in order. On disk, each write is a pair (staged
/// name, output path), `clawc.lock` last; a killed run's is read back as that
/// ([`Committed`]). A file is staged at its output path under `<out>/.clawc-stage/t/`, so
/// a directory the tree does not have yet is moved into place whole (an older clawc staged
/// it under its position in the journal; a journal a killed older run left is still
/// completed).
struct Journal {
    /// The output paths staged but the lock, each at its path under [`TREE`] (the hashes
    /// left zero): held up to the write's budget, the rest in an unnamed file in `--out`
    /// as sorted runs, as the lock's list is (a fresh compile at 30,000 agent ids stages
    /// 90,000 files).
    writes: crate::lock::Listing,
    /// Whether `clawc.lock` was staged.
    lock: bool,
    /// (output path, SHA-256 the file must still have to be deleted)
    deletes: Vec<(String, String)>,
}

impl Journal {
    fn is_empty(&self) -> bool {
        self.writes.is_empty() && !self.lock && self.deletes.is_empty()
    }
}

/// The paths a write staged: `clawc.lock` when it was, and the outputs, in path order
/// (past a budget, read back from disk: see [`crate::lock::Listing`]).
#[derive(Default)]
pub struct Written {
    outputs: crate::lock::Listed,
    lock: bool,
    /// How many, when the journal counted them as it was written.
    count: Option<usize>,
}

impl Written {
    /// The paths in path order, or an error reading them back.
    pub fn iter(&self) -> impl Iterator<Item = io::Result<std::borrow::Cow<'_, str>>> {
        let mut lock = self.lock.then_some(LOCK);
        let mut outputs = self.outputs.iter().map(|e| e.map(|(p, _)| p)).peekable();
        std::iter::from_fn(move || {
            let before = |next: Option<&io::Result<std::borrow::Cow<'_, str>>>| match next {
                Some(Ok(p)) => LOCK < &**p,
                _ => true,
            };
            match lock {
                Some(l) if before(outputs.peek()) => {
                    lock = None;
                    Some(Ok(l.into()))
                }
                _ => outputs.next(),
            }
        })
    }

    /// The paths in the order the journal applies them: the outputs, then `clawc.lock`.
    fn applied(&self) -> impl Iterator<Item = io::Result<std::borrow::Cow<'_, str>>> {
        self.outputs.iter().map(|e| e.map(|(p, _)| p)).chain(self.lock.then_some(Ok(LOCK.into())))
    }

    /// How many there are (0 when they cannot be read back).
    pub fn len(&self) -> usize {
        self.count.unwrap_or_else(|| self.iter().try_fold(0, |n, p| p.map(|_| n + 1)).unwrap_or(0))
    }

    pub fn is_empty(&self) -> bool {
        !self.lock && self.outputs.is_empty()
    }

    /// The paths, as strings (those that can be read back).
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map_while(Result::ok).map(std::borrow::Cow::into_owned).collect()
    }
}

impl std::fmt::Debug for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter().map(|p| p.map_or_else(|e| e.to_string(), std::borrow::Cow::into_owned))).finish()
    }
}

impl PartialEq for Written {
    fn eq(&self, other: &Written) -> bool {
        self.iter().map(Result::ok).eq(other.iter().map(Result::ok))
    }
}

impl Eq for Written {}

/// As a list of strings (`compile --format json`'s summary), streamed.
impl Serialize for Written {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = s.serialize_seq(None)?;
        for p in self.iter() {
            seq.serialize_element(&*p.map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

/// A journal as it is on disk: what recovery reads of a killed run's.
#[derive(Deserialize)]
struct Committed {
    writes: Vec<(String, String)>,
    deletes: Vec<(String, String)>,
}

/// How [`write_tree_with`] writes.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteOptions<'a> {
    /// `--strict`: a warning the plan raises (a stale file left in place) stops the write
    /// before anything is touched.
    pub strict: bool,
    /// Threads for staging files (0: the default of `--jobs`).
    pub jobs: usize,
    /// The directory of stat records (`None`, as with `--no-cache`: every existing file
    /// is read to see whether it changes; see [`super::known`]).
    pub records: Option<&'a Path>,
    /// Directories a stat record may not lie in (the repository under review).
    pub untrusted: &'a [&'a Path],
    /// How many bytes of the list of outputs a compile holds before it writes the rest
    /// into an unnamed file in `--out` as sorted runs (0: the default, 1 MiB, about 4,000
    /// agent ids), and so of the previous lock's outputs table; the tree and the lock are
    /// the same bytes whatever it is.
    pub held: usize,
}

impl WriteOptions<'_> {
    /// [`WriteOptions::held`], the default put in for 0.
    pub(crate) fn held(&self) -> usize {
        if self.held == 0 { crate::lock::HELD } else { self.held }
    }

    /// How long a previous lock is read whole, and how much of its outputs table is held:
    /// [`WriteOptions::held`], by default [`PREVIOUS_HELD`].
    pub(crate) fn previous_held(&self) -> usize {
        if self.held == 0 { PREVIOUS_HELD } else { self.held }
    }
}

/// The default of [`WriteOptions::previous_held`]: 4 MiB, a lock of about 9,000 agent ids.
/// Below it a recompile reads the previous lock as it always did (parsed in place, looked
/// up in a hash table); past it, streamed and paged, each a little slower (parsing a file
/// as it is read is about three times slower than parsing its bytes, and a lookup reads a
/// block), so a pod of a few thousand agent ids pays none of it.
pub(crate) const PREVIOUS_HELD: usize = 4 << 20;

/// Writes `artifacts` (which include `clawc.lock`) into `out`. `secrets` are the
/// resolved token values (stale files holding inline tokens are hashed masked, as the lock
/// records them).
pub fn write_tree(out: &Path, artifacts: &ArtifactSet, secrets: &BTreeMap<String, String>) -> Result<WriteSummary, Diagnostic> {
    write_tree_with(out, artifacts, secrets, WriteOptions::default())
}

/// [`write_tree`] as `opts` say. With `strict`, the summary of a plan with warnings
/// comes back with `refused` set, its `warnings` saying why, and nothing written or
/// removed. With `records`, files the previous compile wrote are not read when the stat
/// record vouches for them, and a record of the new tree is left for the next run.
pub fn write_tree_with(
    out: &Path,
    artifacts: &ArtifactSet,
    secrets: &BTreeMap<String, String>,
    opts: WriteOptions<'_>,
) -> Result<WriteSummary, Diagnostic> {
    check_names(artifacts.0.keys().map(String::as_str))?;
    let new_lock = LockView::among(artifacts);
    let hashes = new_lock.as_ref().map(LockView::hashes).unwrap_or_default();
    let mut writer = Writer::new(out, opts, new_lock.as_ref().is_some_and(LockView::redacted));
    let output = |(rel, a): (&String, &Artifact)| {
        let sha256 = hashes.get(rel.as_str()).map_or_else(|| crate::lock::output_hash(a, secrets), ToString::to_string);
        Output { path: rel.as_str().into(), artifact: a.clone(), sha256 }
    };
    // clawc.lock goes last: until it is replaced, the tree does not claim to be the new one.
    let mut order = artifacts.0.iter().filter(|(r, _)| *r != LOCK).chain(artifacts.0.get_key_value(LOCK)).map(output).peekable();
    while order.peek().is_some() {
        writer.put(order.by_ref().take(PLAN_BATCH).collect())?;
    }
    writer.finish(secrets)
}

/// A write into `--out` that takes the tree a batch at a time (a [`Sink`]), `clawc.lock`
/// last, and [`finish`](Writer::finish)es once the compile is done. Each batch is
/// validated and what changes is staged at once, so a batch's bytes can be dropped; the
/// tree itself is touched only by the commit, after the last batch. Nothing is done
/// before the first batch (a compile that fails early leaves no trace), and a writer
/// dropped unfinished removes its staging, and `--out` itself if it made it and it is
/// still empty.
pub struct Writer<'o> {
    out: &'o Path,
    opts: WriteOptions<'o>,
    redacted: bool,
    open: Option<Open>,
    /// What this compile rendered or took, kept for the next one when the write is done.
    remembered: Making,
    /// What the previous compile left, being read ahead (see [`Writer::read_ahead`]).
    ahead: Option<Ahead>,
}

/// A writer's state from its first batch on.
struct Open {
    /// The `flock` on `--out`, held until the writer is done.
    _flock: fs::File,
    previous: Previous,
    known: Known,
    journal: Journal,
    summary: WriteSummary,
    /// The stamps of the files found to hold their new bytes already.
    seen: Seen,
    /// Which of the previous lock's outputs were put again.
    kept: Kept,
    /// What the previous compile rendered (when its lock is the one found and the record
    /// is whole): services whose render key is unchanged are taken from the tree (and out
    /// of it). With the seal of its bytes, so an unchanged memo is not written again.
    memo: Option<(super::memo::Stored, super::memo::Seal)>,
    /// The memo's services already looked at (read ahead), and whether the record vouches
    /// for every one of their files.
    looked: HashMap<String, super::ahead::Looked>,
    /// The new `clawc.lock`, written last, and its mode.
    lock: Option<(Pending, u32)>,
    /// Whether an output was staged whose hash the previous lock does not record (so the
    /// new lock is not the previous one).
    lock_differs: bool,
    /// Whether `<out>/.clawc-stage` was made by this writer.
    staging: bool,
    /// The directories made for `--out` (outermost first).
    made: Vec<PathBuf>,
    threads: usize,
    interrupted: Arc<AtomicBool>,
}

impl<'o> Writer<'o> {
    /// A writer of a tree that is `redacted` (whose outputs may be vouched for by a stat
    /// record) or not into `out`. Touches nothing yet.
    pub fn new(out: &'o Path, opts: WriteOptions<'o>, redacted: bool) -> Self {
        Writer { out, opts, redacted, open: None, remembered: Making::default(), ahead: None }
    }

    /// Starts reading what the previous compile left in `out` on a thread of its own (see
    /// [`super::ahead`]), for the first batch to find it read.
    pub fn read_ahead(&mut self) {
        if self.open.is_none() && self.ahead.is_none() {
            let target = super::ahead::Target {
                out: self.out.to_path_buf(),
                redacted: self.redacted,
                records: self.opts.records.map(Path::to_path_buf),
                untrusted: self.opts.untrusted.iter().map(|p| p.to_path_buf()).collect(),
                held: self.opts.previous_held(),
            };
            self.ahead = Some(Ahead::start(target));
        }
    }

    /// Starts from what was read of `out` while a watch waited (see [`super::idle`]), if
    /// nothing under it has changed since; else reads ahead as [`Writer::read_ahead`]
    /// does. Hands back the watch, to be dropped once the compile is reported.
    #[cfg(target_os = "linux")]
    pub fn read_idle(&mut self, idle: super::idle::Idle) -> super::idle::Unwatch {
        let (read, unwatch) = idle.take();
        match read {
            Some(read) if self.open.is_none() && self.ahead.is_none() => self.ahead = Some(Ahead::ready(read)),
            _ => self.read_ahead(),
        }
        unwatch
    }

    /// Takes the write lock of `out` and reads what the previous compile left there (or
    /// takes what was read ahead).
    fn open(&mut self) -> Result<&mut Open, Diagnostic> {
        if self.open.is_none() {
            let (made, read) = match self.ahead.take().and_then(Ahead::finish) {
                Some(read) => (Vec::new(), read),
                None => self.read_now()?,
            };
            let kept = Kept::new(&read.previous);
            self.open = Some(Open {
                _flock: read.flock,
                previous: read.previous,
                known: read.known,
                journal: Journal { writes: crate::lock::Listing::new(self.held()), lock: false, deletes: Vec::new() },
                summary: WriteSummary::default(),
                seen: Seen::default(),
                kept,
                memo: read.memo,
                looked: read.looked,
                lock: None,
                lock_differs: false,
                staging: false,
                made,
                threads: crate::jobs::threads(self.opts.jobs),
                interrupted: watch_signals(),
            });
        }
        Ok(self.open.as_mut().expect("opened above"))
    }

    /// Makes `out` if it is missing, takes its write lock, recovers what a killed run left
    /// and reads what the previous compile left; with the directories it made.
    fn read_now(&self) -> Result<(Vec<PathBuf>, super::ahead::Read), Diagnostic> {
        let made = missing_directories(self.out);
        if let Err(d) = prepare_out(self.out) {
            remove_made(&made);
            return Err(d);
        }
        let record = record_at(self.out, self.redacted, self.opts.records, self.opts.untrusted);
        let (flock, previous) = match lock_and_recover(self.out, self.opts.previous_held(), record.as_deref()) {
            Ok(found) => found,
            Err(d) => {
                remove_made(&made);
                return Err(d);
            }
        };
        let old = match &previous {
            Previous::Lock(l) => Some(l),
            _ => None,
        };
        let (known, memo) = known_and_memo(self.out, old, self.redacted, self.opts.records, self.opts.untrusted);
        Ok((made, super::ahead::Read { flock, previous, known, memo, looked: HashMap::new() }))
    }

    /// After the last batch: decides what of the previous tree is stale, then commits
    /// and applies the write (or, with `strict` and a warning, refuses it), and stores the
    /// stat record and the render memo for the next compile.
    pub fn finish(self, secrets: &BTreeMap<String, String>) -> Result<WriteSummary, Diagnostic> {
        let (summary, keeping) = self.finish_first(secrets)?;
        keeping.keep();
        Ok(summary)
    }

    /// [`Writer::finish`], but the stat record and the memo are left to the [`Keeping`]
    /// returned, so the write can be reported first: the tree is whole when this returns.
    pub fn finish_first(mut self, secrets: &BTreeMap<String, String>) -> Result<(WriteSummary, Keeping<'o>), Diagnostic> {
        let out = self.out;
        let strict = self.opts.strict;
        self.open()?;
        let open = self.open.as_mut().expect("opened above");
        if let Some(lock) = open.lock.take() {
            open.take_lock(out, &lock.0, lock.1)?;
            open.lock = Some(lock);
        }
        open.stale(out, secrets)?;
        legacy_manifest(out, &mut open.journal);
        if strict && !open.summary.warnings.is_empty() {
            let mut summary = std::mem::take(&mut open.summary);
            summary.refused = true;
            return Ok((summary, Keeping::nothing(out)));
        }
        let mut open = self.open.take().expect("opened above");
        let lock = open.lock.take().map(|(l, _)| l).filter(|_| open.known.keeps());
        let memo = std::mem::take(&mut self.remembered);
        if open.journal.is_empty() {
            // Everything vouched for: the record already says all there is to say.
            let record = open.summary.vouched < open.summary.unchanged || !open.known.has_record();
            let summary = std::mem::take(&mut open.summary);
            return Ok((summary, Keeping { out, open: Some(open), lock, memo: Some(memo), record }));
        }
        let outputs = std::mem::replace(&mut open.journal.writes, crate::lock::Listing::new(0)).finish();
        let mut written = Written { outputs, lock: open.journal.lock, count: None };
        match open.commit(out, &written) {
            Ok(count) => written.count = Some(count),
            Err(d) => {
                let _ = fs::remove_dir_all(out.join(STAGE));
                return Err(d);
            }
        }
        apply(out, staged(written.applied()), &open.journal.deletes, true)?;
        let mut summary = std::mem::take(&mut open.summary);
        summary.written = written;
        summary.removed = open.journal.deletes.iter().map(|(rel, _)| rel.clone()).collect();
        Ok((summary, Keeping { out, open: Some(open), lock, memo: Some(memo), record: true }))
    }
}

/// What a finished write still owes the next compile ([`Writer::finish_first`]): the stat
/// record and the render memo, caches outside the tree bound to the new lock. Stored by
/// [`Keeping::keep`], or when dropped; the lock of `--out` is held until then, so another
/// compile never finds the tree newer than its record says (a record for another lock is
/// ignored in any case).
#[must_use = "dropping it stores the record and the memo at once"]
pub struct Keeping<'o> {
    out: &'o Path,
    open: Option<Open>,
    lock: Option<Pending>,
    memo: Option<Making>,
    record: bool,
}

impl<'o> Keeping<'o> {
    fn nothing(out: &'o Path) -> Keeping<'o> {
        Keeping { out, open: None, lock: None, memo: None, record: false }
    }

    /// Stores the record and the memo now.
    pub fn keep(self) {}

    /// Stores the record and the memo now, then leaves what the write held (the previous
    /// lock's table, the record and the memo as read, the new lock) to the exit of the
    /// process, which the caller says comes next: freed piece by piece it took about a
    /// millisecond at 3,000 agent ids. The exit closes the files and releases the `flock`
    /// of `--out`.
    pub fn keep_exiting(mut self) {
        self.store();
        std::mem::forget((self.open.take(), self.lock.take(), self.memo.take()));
    }

    fn store(&mut self) {
        if let Some(open) = self.open.as_mut() {
            open.keep(self.out, self.lock.as_ref(), self.memo.as_ref(), self.record);
        }
    }
}

impl Drop for Keeping<'_> {
    fn drop(&mut self) {
        self.store();
    }
}

impl Sink for Writer<'_> {
    fn put(&mut self, mut batch: Vec<Output>) -> Result<(), Diagnostic> {
        check_names(batch.iter().map(|o| &*o.path))?;
        let out = self.out;
        let open = self.open()?;
        if let Some(i) = batch.iter().position(|o| &*o.path == LOCK) {
            let lock = batch.remove(i).artifact;
            let mode = lock.mode();
            open.lock = Some((Pending::whole(lock.bytes), mode));
        }
        open.take(out, &batch)
    }

    fn put_streamed(&mut self, path: Arc<str>, file: Streamed<'_>) -> Result<(), Diagnostic> {
        check_names([&*path])?;
        let out = self.out;
        self.open()?.take_streamed(out, &path, &file)
    }

    /// Keeps the lock to be written as it is made, after the rest, at the finish.
    fn lock(&mut self, lock: Pending, secret: bool) -> Result<(), Diagnostic> {
        self.open()?.lock = Some((lock, Artifact::mode_for(secret, false)));
        Ok(())
    }

    fn reuses(&self) -> bool {
        self.redacted && self.opts.records.is_some()
    }

    fn reuse(&mut self, wanted: &[(&str, &[u8; 32])]) -> Vec<Option<Taken>> {
        let out = self.out;
        match self.open() {
            Ok(open) => open.reuse(out, wanted),
            // A writer that cannot open says so at the first batch put.
            Err(_) => vec![None; wanted.len()],
        }
    }

    fn listed(&self) -> usize {
        match self.open.as_ref().map(|o| &o.previous) {
            Some(Previous::Lock(l)) => l.listed,
            _ => 0,
        }
    }

    fn held(&self) -> usize {
        self.opts.held()
    }

    fn spill(&mut self) -> Result<fs::File, Diagnostic> {
        let out = self.out;
        self.open()?;
        unnamed_in(out).map_err(|e| spill_failed(&e))
    }

    fn described(&mut self, digest: [u8; 32]) {
        if let Some(ahead) = &self.ahead {
            ahead.described(digest);
        }
    }

    /// Kept only when there is a record to keep the memo beside; the rendered parts in an
    /// unnamed file in `--out`, as the list of outputs is.
    fn remember(&mut self, part: Memo, taken: bool) {
        let out = self.out;
        if self.open.as_ref().and_then(|o| o.known.memo_path()).is_none() {
            return;
        }
        if taken {
            self.remembered.taken(part);
        } else {
            self.remembered.rendered(&part, || unnamed_in(out));
        }
    }
}

impl Drop for Writer<'_> {
    /// Unfinished (the compile failed, or a batch was refused): the staging goes, and so
    /// does `--out` if this writer made it and nothing else is in it.
    fn drop(&mut self) {
        if let Some(open) = self.open.take() {
            if open.staging {
                let _ = fs::remove_dir_all(self.out.join(STAGE));
            }
            let Open { made, .. } = open;
            remove_made(&made);
        }
    }
}

/// Takes the write lock of `out`, finishes or rolls back what a killed run left, and reads
/// the previous lock (its table held up to `held` bytes; from the stat record at `record`
/// when that vouches for it).
fn lock_and_recover(out: &Path, held: usize, record: Option<&Path>) -> Result<(fs::File, Previous), Diagnostic> {
    let flock = lock_out(out)?;
    recover(out)?;
    Ok((flock, previous_lock(out, held, record)?))
}

/// `out` and those of its parents that do not exist, outermost first.
fn missing_directories(out: &Path) -> Vec<PathBuf> {
    let mut made: Vec<PathBuf> = out
        .ancestors()
        .take_while(|p| !p.as_os_str().is_empty() && fs::symlink_metadata(p).is_err_and(|e| e.kind() == io::ErrorKind::NotFound))
        .map(Path::to_path_buf)
        .collect();
    made.reverse();
    made
}

/// Removes the directories a writer made, innermost first, each only if empty.
fn remove_made(made: &[PathBuf]) {
    for dir in made.iter().rev() {
        if fs::remove_dir(dir).is_err() {
            break;
        }
    }
}

/// Every output path must be plain names, and none may be clawc's own bookkeeping.
pub(super) fn check_names<'a>(paths: impl IntoIterator<Item = &'a str>) -> Result<(), Diagnostic> {
    for rel in paths {
        let first = rel.split('/').next().unwrap_or_default();
        if !is_safe_relative(rel) || [STAGE, LEGACY_MANIFEST].contains(&first) {
            return Err(Diagnostic::error(codes::INVALID_NAME, format!("refusing to write the output path {rel:?}")).help(
                "output paths are built from service, agent and skill names; rename the one that contains `.`, `..`, `/` or an empty part",
            ));
        }
    }
    Ok(())
}

/// Creates `out` if needed; refuses one that is a symlink or not a directory (in CI the
/// default `--out` is part of the untrusted checkout).
fn prepare_out(out: &Path) -> Result<(), Diagnostic> {
    if let Some(kind) = disk::not_a_directory(out) {
        return Err(Diagnostic::error(codes::NOT_A_DIRECTORY, format!("the output directory `{}` is {}", out.display(), kind.describe()))
            .help("clawc never writes through a symlinked output directory; point -o at a real directory (or remove the link)"));
    }
    fs::create_dir_all(out).map_err(|e| io("create directory", out, e))
}

/// What the record and the render memo of `out` say, for the previous lock `old`: the
/// write reads them when it opens `--out`, or the read-ahead before it.
pub(super) fn known_and_memo(
    out: &Path,
    old: Option<&PreviousLock>,
    redacted: bool,
    records: Option<&Path>,
    untrusted: &[&Path],
) -> (Known, Option<(super::memo::Stored, super::memo::Seal)>) {
    let known = Known::load(out, old, redacted, records, untrusted);
    let memo = old.filter(|_| known.has_record()).zip(known.memo_path()).and_then(|(l, at)| super::memo::load(&at, &l.digest));
    (known, memo)
}

/// `out` opened to be locked: a real directory, never through a symlink.
pub(super) fn open_for_lock(out: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW).open(out)
}

/// Takes the write lock of `out` (an `flock` on the directory itself, so no lock file is
/// left in the tree), waiting up to [`LOCK_WAIT`] for another compile.
fn lock_out(out: &Path) -> Result<fs::File, Diagnostic> {
    let file = open_for_lock(out).map_err(|e| io("open for locking", out, e))?;
    let start = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_WAIT => std::thread::sleep(Duration::from_millis(20)),
            Err(fs::TryLockError::WouldBlock) => {
                return Err(Diagnostic::error(
                    codes::BUSY,
                    format!("another clawc has been writing `{}` for {} s", out.display(), LOCK_WAIT.as_secs()),
                )
                .help("wait for it to finish, or stop it; clawc holds a lock (flock) on the output directory while writing"));
            }
            Err(fs::TryLockError::Error(e)) => return Err(io("lock", out, e)),
        }
    }
}

/// Finishes or rolls back what a killed run left: a journal is completed, staging
/// without one is removed.
fn recover(out: &Path) -> Result<(), Diagnostic> {
    let stage = out.join(STAGE);
    match fs::symlink_metadata(&stage) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io("inspect", &stage, e)),
        Ok(m) if !m.is_dir() => return fs::remove_file(&stage).map_err(|e| io("remove", &stage, e)),
        Ok(_) => {}
    }
    let journal = match disk::read(out, &format!("{STAGE}/{JOURNAL}"), disk::MAX_BOOKKEEPING) {
        Ok(Contents::Bytes(b)) => serde_json::from_slice::<Committed>(&b).ok(),
        _ => None,
    };
    match journal {
        Some(j) if j.writes.iter().all(|(s, rel)| is_staged_name(s, rel) && is_safe_relative(rel)) => {
            apply(out, j.writes.iter().map(|(s, rel)| Ok((s.clone(), rel.as_str().into()))), &j.deletes, false)
        }
        _ => fs::remove_dir_all(&stage).map_err(|e| io("remove stale staging", &stage, e)),
    }
}

/// The name a write of `rel` may be staged under: its path under [`TREE`], or (a killed
/// older run's) a number.
fn is_staged_name(s: &str, rel: &str) -> bool {
    s.strip_prefix(TREE).and_then(|s| s.strip_prefix('/')) == Some(rel) || (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
}

/// The lock the previous compile left in `out`.
#[expect(clippy::large_enum_variant, reason = "a write has one")]
pub(crate) enum Previous {
    Missing,
    /// There is one clawc cannot read, so nothing can be proved to be clawc's.
    Unreadable,
    Lock(PreviousLock),
}

/// What a write and a check need of the lock found in `--out`: its outputs, and what
/// binds a stat record to it. The lock itself and its bytes are not kept (at 10,000
/// agents they are megabytes, held beside the whole new tree).
pub(crate) struct PreviousLock {
    /// Its outputs with a safe path.
    pub outputs: Outputs,
    /// The digest of its bytes as the stat record binds to it (`record::lock_digest`), and
    /// how many inputs and outputs it lists.
    pub digest: [u8; 32],
    pub inputs: usize,
    pub listed: usize,
    /// [`crate::lock::described_digest`] of its inputs.
    pub described: [u8; 32],
    /// Whether it was compiled with tokens redacted.
    pub redacted: bool,
    /// Its stamp when it was read, unless it changed within the clock tick before: a lock
    /// found with this stamp still holds the bytes `digest` is of.
    pub stamp: Option<Stamp>,
    /// Read from the stat record's copy, which the record vouched for at `stamp`.
    pub copied: bool,
}

/// The lock in `out`, its outputs table held up to `held` bytes and past that on disk, in
/// an unnamed file in `out` (`usize::MAX`: held whatever its size, for a check, which
/// writes nothing). A lock longer than `held` is parsed and hashed as it is read, not
/// held (13 MB at 30,000 agent ids). When the stat record at `record` vouches for the lock
/// as it is now, the lock is not read at all: the record's copy of it is.
pub(crate) fn previous_lock(out: &Path, held: usize, record: Option<&Path>) -> Result<Previous, Diagnostic> {
    if let Some(copied) = record.and_then(|at| copied_lock(out, at, held)) {
        return copied;
    }
    // Read before the lock is, as the stat record's time is (see `record`).
    let time = super::record::now();
    let hold = u64::try_from(held).unwrap_or(u64::MAX);
    let (opened, meta) = disk::read_meta_or_open(out, LOCK, disk::MAX_BOOKKEEPING, hold).map_err(|e| io("read", &out.join(LOCK), e))?;
    let stamp = meta.map(|m| Stamp::of(&m)).filter(|s| !s.racy(time));
    let file = || unnamed_in(out);
    let lock = |read: PreviousRead<'_>, digest| {
        Previous::Lock(PreviousLock {
            digest,
            inputs: read.inputs.len(),
            listed: read.listed,
            described: crate::lock::described_digest(read.inputs.iter().map(|i| (&*i.path, &*i.role, i.sha256.as_deref()))),
            redacted: read.redacted,
            stamp,
            copied: false,
            outputs: read.outputs,
        })
    };
    Ok(match opened {
        Opened::Read(Contents::Missing) => Previous::Missing,
        // Parsed in place (paths and hashes borrowed from the bytes), as the record reads
        // the new lock: at 3,000 agents it lists 9,301 outputs.
        Opened::Read(Contents::Bytes(b)) => {
            let mut de = serde_json::Deserializer::from_slice(&b);
            match read_previous(&mut de, held, capacity_for(&b), &file).map_err(|e| spill_failed(&e))? {
                Ok(read) => lock(read, super::record::lock_digest(&b)),
                Err(_) => Previous::Unreadable,
            }
        }
        Opened::Read(_) => Previous::Unreadable,
        Opened::File(f) => {
            let mut hashing = super::record::lock_hashing(io::Read::take(&f, disk::MAX_BOOKKEEPING + 1));
            let mut de = serde_json::Deserializer::from_reader(io::BufReader::with_capacity(1 << 16, &mut hashing));
            let read = read_previous(&mut de, held, usize::MAX, &file).map_err(|e| spill_failed(&e))?;
            drop(de);
            // Parsed to its end, so every byte of it was hashed (a lock grown past the
            // bound since it was looked at is unreadable, as one found that long is).
            match (read, hashing.finish()) {
                (Ok(read), (digest, len)) if len <= disk::MAX_BOOKKEEPING => lock(read, digest),
                _ => Previous::Unreadable,
            }
        }
    })
}

/// The lock in `out` as the stat record at `at` copied it (`lock::copy`), when the record
/// vouches that the lock is still the one it copied (its stamp the recorded one, both
/// older than the record): a recompile neither reads, hashes nor parses the lock (13 MB of
/// JSON at 30,000 agent ids), as a check does not. Its outputs go into the table as
/// [`read_previous`] puts the lock's, and its head is read by the same reader. `None`:
/// no record, no copy, the lock changed, or a copy that does not decode (the lock is then
/// read); an error: the table could not go to disk.
fn copied_lock(out: &Path, at: &Path, held: usize) -> Option<Result<Previous, Diagnostic>> {
    // Read before the lock is, as the stat record's time is (see `record`).
    let time = super::record::now();
    let meta = fs::symlink_metadata(out.join(LOCK)).ok().filter(fs::Metadata::is_file)?;
    let stamp = Stamp::of(&meta);
    let record = super::record::load_on_disk(at)?;
    // Vouched for by its stamp; else, when the lock's bytes are the ones the record is
    // bound to, the copy is of them too (a lock written within the record's clock tick,
    // as by the compile before, is never vouched for): hashing the lock is a fraction of
    // parsing it.
    let vouched = record.copy_for(&stamp).is_some();
    let copy = if vouched { record.copy() } else { (lock_digest(&out.join(LOCK))? == record.lock()).then(|| record.copy()).flatten() };
    let mut copy = io::BufReader::with_capacity(1 << 16, copy?);
    let head = crate::lock::read_copied_head(&mut copy)?;
    let file = || unnamed_in(out);
    let read = match read_previous(&mut serde_json::Deserializer::from_slice(&head), held, 0, &file) {
        Ok(Ok(read)) if read.listed == 0 => read,
        Ok(_) => return None,
        Err(e) => return Some(Err(spill_failed(&e))),
    };
    // Room for as many outputs as the record stamps (the copy's count, in a whole record).
    let capacity = super::record::Stamps::counts(&record).1.min(disk::MAX_BOOKKEEPING as usize / 34);
    let mut filling = super::outputs::Filling::new(held, capacity, &file);
    let each = |i, path: &str, digest| if is_safe_relative(path) { filling.insert(path, i, Some(digest)) } else { Ok(()) };
    let listed = match crate::lock::read_copied_outputs(&mut copy, each) {
        Ok(listed) => listed?,
        Err(e) => return Some(Err(spill_failed(&e))),
    };
    let outputs = match filling.finish() {
        Ok(outputs) => outputs,
        Err(e) => return Some(Err(spill_failed(&e))),
    };
    let described = crate::lock::described_digest(read.inputs.iter().map(|i| (&*i.path, &*i.role, i.sha256.as_deref())));
    Some(Ok(Previous::Lock(PreviousLock {
        digest: record.lock(),
        inputs: read.inputs.len(),
        listed,
        described,
        redacted: read.redacted,
        stamp: Some(stamp).filter(|s| vouched || !s.racy(time)),
        copied: vouched,
        outputs,
    })))
}

/// The digest of the lock at `path` as the record binds to it (`record::lock_digest`; a
/// regular file, not followed, bounded), read as it is hashed.
fn lock_digest(path: &Path) -> Option<[u8; 32]> {
    let file = disk::open_regular(path, false).ok()?;
    let mut hashing = super::record::lock_hashing(io::Read::take(&file, disk::MAX_BOOKKEEPING + 1));
    // Read in large parts: an 8 KiB buffer was 170 reads for a 3,000-agent lock.
    io::copy(&mut io::BufReader::with_capacity(1 << 18, &mut hashing), &mut io::sink()).ok()?;
    let (digest, len) = hashing.finish();
    (len <= disk::MAX_BOOKKEEPING).then_some(digest)
}

pub(crate) use super::outputs::Outputs;

/// Which of the previous lock's outputs (by their index in it) a compile put again; the
/// rest are the previous tree's stale files. A flag each, not every path put: this grows
/// with the agents.
pub(crate) struct Kept(Vec<bool>);

impl Kept {
    pub(crate) fn new(previous: &Previous) -> Self {
        Kept(vec![false; if let Previous::Lock(l) = previous { l.listed } else { 0 }])
    }

    /// `rel` was put again.
    pub(crate) fn mark(&mut self, previous: &Outputs, rel: &str) {
        if let Some((i, _)) = previous.get(rel) {
            self.mark_at(i);
        }
    }

    /// Output `i` of the previous lock was put again.
    pub(crate) fn mark_at(&mut self, i: usize) {
        if let Some(k) = self.0.get_mut(i) {
            *k = true;
        }
    }

    /// The outputs of `previous` not put again (the lock aside): path and SHA-256, in path
    /// order.
    pub(crate) fn stale<'p>(&self, previous: &'p Outputs) -> io::Result<Vec<Stale<'p>>> {
        let mut stale = Vec::new();
        for entry in previous.iter() {
            let (rel, i, hash) = entry?;
            if !self.0.get(i).is_some_and(|k| *k) && rel != LOCK {
                stale.push((rel, hash));
            }
        }
        stale.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // A lookup that found the table on disk unreadable took a kept file for one not
        // listed: the stale files cannot be told.
        if previous.failed() {
            return Err(io::Error::other(TABLE_UNREADABLE));
        }
        Ok(stale)
    }
}

/// An output of the previous lock not put again: its path and SHA-256.
pub(crate) type Stale<'p> = (Cow<'p, str>, Option<[u8; 32]>);

/// No outputs: what an `--out` without a lock holds of clawc's.
pub(crate) static NONE: std::sync::LazyLock<Outputs> = std::sync::LazyLock::new(Outputs::new);

impl Previous {
    /// What the previous compile wrote: the lock's outputs (those with a safe path).
    /// `None`: there is a lock clawc cannot read, so nothing can be proved to be clawc's.
    pub(crate) fn outputs(&self) -> Option<&Outputs> {
        match self {
            Previous::Missing => Some(&*NONE),
            Previous::Unreadable => None,
            Previous::Lock(l) => Some(&l.outputs),
        }
    }

    /// Whether the lock read when `--out` was opened is known not to be the one whose
    /// digest is `digest`: then a new lock is written without reading the old one again.
    fn lock_is_not(&self, digest: &[u8; 32]) -> bool {
        matches!(self, Previous::Lock(l) if *digest != l.digest)
    }

    /// Whether the lock found with `meta` is the one read when `--out` was opened, untouched
    /// since (its stamp), and that one's digest is `digest`: then it is current without
    /// being read again (14 MB at 30,000 agent ids).
    fn lock_is(&self, digest: &[u8; 32], meta: &fs::Metadata) -> bool {
        matches!(self, Previous::Lock(l) if *digest == l.digest && l.stamp == Some(Stamp::of(meta)))
    }

    /// [`Previous::lock_is`], for the lock the stat record copied: vouched for as it is.
    fn lock_vouched(&self, digest: &[u8; 32], meta: &fs::Metadata) -> bool {
        matches!(self, Previous::Lock(l) if l.copied) && self.lock_is(digest, meta)
    }
}

/// How many outputs a write's plan looks at before deciding them.
const PLAN_BATCH: usize = 512;

impl Open {
    /// Plans `batch`, then stages at once what of it changes, and journals it.
    fn take(&mut self, out: &Path, batch: &[Output]) -> Result<(), Diagnostic> {
        let planned = self.plan(out, batch)?;
        if planned.is_empty() {
            return Ok(());
        }
        let dir = self.staging(out)?;
        let writes: Vec<(&str, &Artifact)> = planned.iter().map(|&i| (&*batch[i].path, &batch[i].artifact)).collect();
        self.stage(&dir, &writes)?;
        for i in planned {
            // The journal has no use for the hash (and decoding it cost 0.45 µs an output).
            self.journal.writes.put(Arc::clone(&batch[i].path), [0; 32], || unnamed_in(out), |e| e).map_err(|e| spill_failed(&e))?;
        }
        Ok(())
    }

    /// Decides each of `batch` in order (skip it, or stage it), refusing before anything is
    /// touched: the positions of those to stage. What is at the paths is looked at
    /// [`PLAN_BATCH`] at a time, on every core for a big batch (each run keeping the
    /// directories it has seen).
    fn plan(&mut self, out: &Path, batch: &[Output]) -> Result<Vec<usize>, Diagnostic> {
        let mut planned = Vec::new();
        // (The lock never comes here: it is taken apart, by `take_lock`.)
        let threads = if batch.len() < crate::jobs::PARALLEL_MIN_FILES { 1 } else { self.threads };
        for (c, chunk) in batch.chunks(PLAN_BATCH).enumerate() {
            let looks = crate::jobs::map_runs(chunk, threads, PLAN_BATCH / 2, |_, run| {
                let mut dirs = disk::Dirs::default();
                run.iter().map(|o| disk::inspect_in(out, &o.path, &mut dirs)).collect::<Vec<_>>()
            });
            for (k, (o, found)) in chunk.iter().zip(looks.into_iter().flatten()).enumerate() {
                if self.decide(out, &o.path, Bytes::Held(&o.artifact), &o.sha256, found)? {
                    planned.push(c * PLAN_BATCH + k);
                }
            }
        }
        Ok(planned)
    }

    /// Decides one file found as `found` at `rel` that is to hold `bytes` (skip it: false;
    /// stage it: true), or refuses it.
    fn decide(&mut self, out: &Path, rel: &Arc<str>, bytes: Bytes<'_>, sha256: &str, found: io::Result<Found>) -> Result<bool, Diagnostic> {
        let previous = self.previous.outputs();
        if let Some(previous) = previous {
            self.kept.mark(previous, rel);
        }
        let owned = |rel: &str| previous.is_some_and(|p| p.get(rel).is_some());
        let found = found.map_err(|e| io("inspect", &out.join(&**rel), e))?;
        match found {
            Found::Missing => {}
            Found::File(meta)
                if let Some(i) = previous.and_then(|p| self.known.vouches(p, rel, bytes.mode(), bytes.secret(), sha256, &meta)) =>
            {
                self.summary.unchanged += 1;
                self.summary.vouched += 1;
                self.seen.vouched(i);
                return Ok(false);
            }
            Found::File(meta) if is_current(out, rel, bytes, &meta) => {
                self.summary.unchanged += 1;
                self.seen.push(Arc::clone(rel), Stamp::of(&meta));
                return Ok(false);
            }
            Found::File(_) | Found::Other(Kind::Symlink | Kind::Fifo | Kind::Socket | Kind::Device) if owned(rel) => {}
            Found::File(_) if bytes.same_as(out, rel) => {}
            Found::Blocked { at, kind } => return Err(blocked(out, &at, kind)),
            // A table on disk that could not be read back cannot tell whose it is.
            Found::File(_) | Found::Other(_) if previous.is_some_and(Outputs::failed) => return Err(unreadable_table()),
            Found::File(_) | Found::Other(_) => return Err(not_owned(out, rel, &found, previous.is_none())),
        }
        self.lock_differs |= previous.and_then(|p| p.get(rel)).and_then(|(_, d)| d) != crate::digest::from_hex(sha256);
        Ok(true)
    }

    /// Decides and stages one file made as it is written ([`Sink::put_streamed`]).
    fn take_streamed(&mut self, out: &Path, rel: &Arc<str>, file: &Streamed<'_>) -> Result<(), Diagnostic> {
        let found = disk::inspect_in(out, rel, &mut disk::Dirs::default());
        if !self.decide(out, rel, Bytes::Streamed(file), &hex::encode(file.digest), found)? {
            return Ok(());
        }
        let dir = self.staging(out)?;
        stage_with(&dir, rel, Bytes::Streamed(file).mode(), |f| file.write_checked(f))?;
        self.journal.writes.put(Arc::clone(rel), [0; 32], || unnamed_in(out), |e| e).map_err(|e| spill_failed(&e))
    }

    /// Decides the new lock as [`Open::plan`] decides a file, and stages it (written as it
    /// is made) if it changes. The lock read when `--out` was opened is known by its digest:
    /// found with the stamp it was read with, it is not read again, and a new lock with
    /// another digest replaces it unread (1.4 MB at 3,000 agent ids).
    fn take_lock(&mut self, out: &Path, lock: &Pending, mode: u32) -> Result<(), Diagnostic> {
        let found = disk::inspect_in(out, LOCK, &mut disk::Dirs::default()).map_err(|e| io("inspect", &out.join(LOCK), e))?;
        match &found {
            Found::Blocked { at, kind } => return Err(blocked(out, at, *kind)),
            // Whatever else is there is replaced: the lock is always clawc's to write.
            Found::Other(kind) if !matches!(kind, Kind::Symlink | Kind::Fifo | Kind::Socket | Kind::Device) => {
                return Err(not_owned(out, LOCK, &found, self.previous.outputs().is_none()));
            }
            _ => {}
        }
        // An output written with a hash the lock read does not record: the new lock is
        // another, so its digest is taken as it is written rather than before.
        let known_new = self.lock_differs && matches!(self.previous, Previous::Lock(_));
        if let Found::File(meta) = &found
            && !known_new
        {
            let digest = lock.digest();
            let current = meta.len() == lock.len()
                && meta.permissions().mode() & 0o777 == mode
                && !self.previous.lock_is_not(&digest)
                && (self.previous.lock_is(&digest, meta)
                    || matches!(disk::read(out, LOCK, meta.len()), Ok(Contents::Bytes(b)) if super::record::lock_digest(&b) == digest));
            if current {
                self.summary.unchanged += 1;
                // Then the record need not be stored again only to stamp the lock.
                self.summary.vouched += usize::from(self.previous.lock_vouched(&digest, meta));
                self.seen.push(LOCK.into(), Stamp::of(meta));
                return Ok(());
            }
        }
        self.journal.lock = true;
        let dir = self.staging(out)?;
        stage_with(&dir, LOCK, mode, |mut f| lock.write_hashing(&mut f))
    }

    /// The previous tree's files the new one no longer has: deleted if they are what
    /// clawc wrote, else left with a warning.
    fn stale(&mut self, out: &Path, secrets: &BTreeMap<String, String>) -> Result<(), Diagnostic> {
        let Some(previous) = self.previous.outputs() else { return Ok(()) };
        for (rel, hash) in self.kept.stale(previous).map_err(|e| spill_failed(&e))? {
            let rel = &*rel;
            match disk::read(out, rel, disk::MAX_OUTPUT).map_err(|e| io("read", &out.join(rel), e))? {
                Contents::Missing => {}
                Contents::Bytes(b) if is_what_clawc_wrote(&b, hash.as_ref(), secrets) => {
                    self.journal.deletes.push((rel.to_string(), sha256_hex(&b)));
                }
                _ => self.summary.warnings.push(
                    Diagnostic::warning(
                        codes::KEPT,
                        format!("left `{rel}` in place: clawc no longer writes it, but it is not the file clawc wrote"),
                    )
                    .help("it was edited or replaced after the last compile; delete it yourself if it is not needed"),
                ),
            }
        }
        Ok(())
    }
}

impl Open {
    /// For each of `wanted` (an agent service and its render key): the files the memo has
    /// for it rendered from that key, when each is still the one the previous lock records,
    /// vouched for by the stat record (never read; looked at on every core); then they
    /// count as put and unchanged. A service is taken whole or not at all.
    fn reuse(&mut self, out: &Path, wanted: &[(&str, &[u8; 32])]) -> Vec<Option<Taken>> {
        use super::ahead::{Held, Looked};
        let (Some((memo, _)), Some(previous)) = (self.memo.as_ref(), self.previous.outputs()) else { return vec![None; wanted.len()] };
        // Each candidate: held as the read-ahead found it, or its files with whether they
        // were vouched for ahead.
        enum Candidate {
            Held(Held),
            Files(Vec<Recorded>, Option<bool>),
        }
        let candidates: Vec<Option<Candidate>> = wanted
            .iter()
            .map(|(service, key)| match self.looked.remove(*service) {
                Some(Looked::Vouched(Some(held))) => (held.key == **key).then_some(Candidate::Held(held)),
                ahead => {
                    let (memo_key, files) = memo.files(service)?;
                    let ahead = ahead.map(|l| l.vouched());
                    // A service looked at ahead had its names checked there.
                    let named = ahead.is_some() || check_names(files.iter().map(|f| &*f.path)).is_ok();
                    (memo_key == **key && named).then_some(Candidate::Files(files, ahead))
                }
            })
            .collect();
        let files: Vec<&Recorded> = candidates
            .iter()
            .flatten()
            .flat_map(|c| match c {
                Candidate::Files(files, None) => &files[..],
                _ => &[],
            })
            .collect();
        let threads = if files.len() < PARALLEL_MIN_FILES { 1 } else { self.threads };
        let known = &self.known;
        let looks = crate::jobs::map_runs(&files, threads, 256, |_, run| {
            let mut walk = known.walk(out);
            run.iter().map(|f| walk.as_mut().and_then(|w| known.looks_recorded(w, previous, f))).collect::<Vec<_>>()
        });
        let mut looks = looks.into_iter().flatten();
        let mut taken = Vec::with_capacity(wanted.len());
        for candidate in candidates {
            let found = match candidate {
                None => None,
                Some(Candidate::Held(Held { files, at, .. })) => Some((files, at)),
                Some(Candidate::Files(files, ahead)) => {
                    // Every one of its looks is taken, vouched for or not, so the next
                    // service's start where they should. Vouched for, each file is one the
                    // previous lock records with a hash.
                    let at: Option<Vec<_>> = match ahead {
                        None => looks.by_ref().take(files.len()).collect::<Vec<_>>().into_iter().collect(),
                        Some(true) => files.iter().map(|f| previous.get(&f.path).and_then(|(i, d)| Some((i, d?)))).collect(),
                        Some(false) => None,
                    };
                    at.map(|at| (files, at))
                }
            };
            let Some((files, recorded)) = found else {
                taken.push(None);
                continue;
            };
            for &(i, _) in &recorded {
                self.kept.mark_at(i);
                self.seen.vouched(i);
            }
            self.summary.unchanged += files.len();
            self.summary.vouched += files.len();
            self.summary.reused += 1;
            taken.push(Some(Taken { files, digests: recorded.into_iter().map(|(_, d)| d).collect() }));
        }
        taken
    }

    /// After the write, for the next compile: the stat record (when `record`) and the
    /// render memo, both bound to the new lock (its bytes and digest), side by side when
    /// there are threads for it (at 3,000 agent ids they are 1 and 1.3 MB).
    fn keep(&mut self, out: &Path, lock: Option<&Pending>, memo: Option<&Making>, record: bool) {
        let seen = std::mem::take(&mut self.seen);
        let open = &*self;
        let store = move || {
            if record {
                open.known.store(out, seen, open.previous.outputs().unwrap_or(&*NONE), lock, open.threads);
            }
        };
        let remember = || open.remember(lock.map(Pending::digest), memo);
        if open.threads > 1 && record && memo.is_some_and(|m| !m.is_empty()) {
            std::thread::scope(|s| {
                s.spawn(remember);
                store();
            });
        } else {
            store();
            remember();
        }
    }

    /// Keeps `memo` for the next compile, bound to the new lock `lock` (dropped when there
    /// is no record to keep it beside).
    fn remember(&self, lock: Option<[u8; 32]>, memo: Option<&Making>) {
        if let (Some(at), Some(lock), Some(memo)) = (self.known.memo_path(), lock, memo) {
            super::memo::store(&at, &lock, memo, self.memo.as_ref());
        }
    }
}

/// The manifest older clawc versions wrote is removed (when it is one).
fn legacy_manifest(out: &Path, journal: &mut Journal) {
    if let Some(b) = legacy_manifest_bytes(out) {
        journal.deletes.push((LEGACY_MANIFEST.to_string(), sha256_hex(&b)));
    }
}

/// The bytes of `<out>/.clawc-manifest.json` when it is a manifest clawc wrote.
pub(crate) fn legacy_manifest_bytes(out: &Path) -> Option<Vec<u8>> {
    match disk::read(out, LEGACY_MANIFEST, disk::MAX_BOOKKEEPING) {
        Ok(Contents::Bytes(b)) if serde_json::from_slice::<serde_json::Value>(&b).is_ok_and(|v| v["generator"] == "clawc") => Some(b),
        _ => None,
    }
}

/// Whether `bytes` hash to what the lock recorded (files with inline tokens are recorded
/// with the tokens masked, so the lock cannot confirm a guessed token).
pub(crate) fn is_what_clawc_wrote(bytes: &[u8], hash: Option<&[u8; 32]>, secrets: &BTreeMap<String, String>) -> bool {
    let sha256 = crate::digest::sha256;
    hash.is_some_and(|h| sha256(bytes) == *h || sha256(&crate::secrets::mask(bytes, secrets)) == *h)
}

/// A file's bytes as the write decides on it: held, or made as they are written.
#[derive(Clone, Copy)]
enum Bytes<'a> {
    Held(&'a Artifact),
    Streamed(&'a Streamed<'a>),
}

impl Bytes<'_> {
    fn mode(self) -> u32 {
        match self {
            Bytes::Held(a) => a.mode(),
            Bytes::Streamed(_) => Artifact::mode_for(false, false),
        }
    }

    fn secret(self) -> bool {
        matches!(self, Bytes::Held(a) if a.secret)
    }

    fn len(self) -> u64 {
        match self {
            Bytes::Held(a) => a.bytes.len() as u64,
            Bytes::Streamed(f) => f.len,
        }
    }

    /// Whether `out/rel` holds these bytes: compared, or for a file made as it is written,
    /// hashed as it is read (and never held).
    fn same_as(self, out: &Path, rel: &str) -> bool {
        match self {
            Bytes::Held(a) => matches!(disk::read(out, rel, self.len()), Ok(Contents::Bytes(b)) if *b == *a.bytes),
            Bytes::Streamed(f) => match disk::read_meta_or_open(out, rel, f.len, 0) {
                Ok((Opened::File(file), _)) => {
                    let mut hashing = crate::digest::Hashing::new(file);
                    io::copy(&mut hashing, &mut io::sink()).is_ok() && hashing.finish() == (f.digest, f.len)
                }
                Ok((Opened::Read(Contents::Bytes(b)), _)) => crate::digest::sha256(&b) == f.digest && b.len() as u64 == f.len,
                _ => false,
            },
        }
    }
}

/// Whether the file found with `meta` already is `bytes`: its length, its mode, and its
/// bytes.
fn is_current(out: &Path, rel: &str, bytes: Bytes<'_>, meta: &fs::Metadata) -> bool {
    meta.len() == bytes.len() && meta.permissions().mode() & 0o777 == bytes.mode() && bytes.same_as(out, rel)
}

fn blocked(out: &Path, at: &str, kind: Kind) -> Diagnostic {
    Diagnostic::error(
        codes::NOT_A_DIRECTORY,
        format!("`{}` is {} where clawc needs a directory; it is never followed", out.join(at).display(), kind.describe()),
    )
    .help("remove it (it is not something clawc wrote) and compile again")
}

fn not_owned(out: &Path, rel: &str, found: &Found, lock_unreadable: bool) -> Diagnostic {
    let what = match found {
        Found::Other(k) => k.describe(),
        _ => "a file",
    };
    let path = out.join(rel);
    if lock_unreadable {
        return Diagnostic::error(
            codes::LOCK_UNREADABLE,
            format!("`{}` is {what} clawc would replace, and `{LOCK}` there cannot be read to prove that clawc wrote it", path.display()),
        )
        .help(format!("restore {LOCK} (a merge conflict?), or delete the compiled directory and compile again"));
    }
    Diagnostic::error(codes::NOT_OWNED, format!("`{}` is {what} that clawc did not write; refusing to replace it", path.display()))
        .help("the output directory holds files of its own where clawc writes; choose another -o, or move them away")
}

/// Below this many files the staging is written by the calling thread.
const PARALLEL_MIN_FILES: usize = 512;

impl Open {
    /// Writes each of `writes` (staged name, bytes) to `<out>/.clawc-stage/<name>`. The
    /// files are independent of each other, so contiguous runs of them are written on up
    /// to `threads` threads; a failure or interruption anywhere stops every run before its
    /// next file.
    fn stage(&self, dir: &Path, writes: &[(&str, &Artifact)]) -> Result<(), Diagnostic> {
        let threads = if writes.len() < PARALLEL_MIN_FILES { 1 } else { self.threads };
        let failed = AtomicBool::new(false);
        let interrupted = &self.interrupted;
        let runs = crate::jobs::map_runs(writes, threads, 64, |_, run| {
            for (name, a) in run {
                if interrupted.load(Ordering::SeqCst) {
                    return Err(interruption());
                }
                if failed.load(Ordering::SeqCst) {
                    // Another run failed; its error is the one reported.
                    return Ok(());
                }
                stage_one(dir, name, a).inspect_err(|_| failed.store(true, Ordering::SeqCst))?;
            }
            Ok(())
        });
        // The first failure in journal order.
        runs.into_iter().collect::<Result<Vec<()>, Diagnostic>>().map(|_| ())
    }

    /// `<out>/.clawc-stage`, made the first time it is wanted.
    fn staging(&mut self, out: &Path) -> Result<PathBuf, Diagnostic> {
        let dir = out.join(STAGE);
        if !self.staging {
            fs::create_dir(&dir).map_err(|e| io("create staging directory", &dir, e))?;
            self.staging = true;
        }
        Ok(dir)
    }

    /// Writes the journal once every file is staged: the commit point.
    fn commit(&mut self, out: &Path, written: &Written) -> Result<usize, Diagnostic> {
        // Made here when there are only deletes.
        let dir = self.staging(out)?;
        let tmp = dir.join(format!("{JOURNAL}.tmp"));
        // Streamed: at 30,000 agent ids a fresh compile's journal is 4 MB.
        let write = || -> io::Result<usize> {
            let mut w = io::BufWriter::new(fs::File::create(&tmp)?);
            let count = write_journal(&mut w, staged(written.applied()), &self.journal.deletes)?;
            w.flush()?;
            Ok(count)
        };
        let count = write().map_err(|e| io("write", &tmp, e))?;
        if self.interrupted.load(Ordering::SeqCst) {
            return Err(interruption());
        }
        fs::rename(&tmp, dir.join(JOURNAL)).map_err(|e| io("commit", &dir.join(JOURNAL), e))?;
        Ok(count)
    }
}

/// Stages the output `rel` at its path under `<dir>/t/`, with the artifact's mode.
fn stage_one(dir: &Path, rel: &str, a: &Artifact) -> Result<(), Diagnostic> {
    stage_with(dir, rel, a.mode(), |mut f| f.write_all(&a.bytes))
}

/// Stages the output `rel` at its path under `<dir>/t/` with `mode`, its bytes written by
/// `write`: created new, its directories made as they are first wanted. The staging is
/// this run's own (made new, `--out` locked), so nothing else is there; a path put twice
/// is staged again (the later put wins, as when it is applied).
fn stage_with(dir: &Path, rel: &str, mode: u32, write: impl FnOnce(&fs::File) -> io::Result<()>) -> Result<(), Diagnostic> {
    let path = dir.join(TREE).join(rel);
    let create = || fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&path);
    let f = match create() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent = path.parent().expect("a staged path has a parent");
            fs::create_dir_all(parent).map_err(|e| io("create staging directory", parent, e))?;
            create()
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => fs::remove_file(&path).and_then(|()| create()),
        created => created,
    }
    .map_err(|e| io("stage a file in", dir, e))?;
    write(&f).map_err(|e| io("write", &path, e))?;
    // The umask must not loosen or tighten what clawc promises.
    f.set_permissions(fs::Permissions::from_mode(mode)).map_err(|e| io("set the mode of", &path, e))
}

fn interruption() -> Diagnostic {
    Diagnostic::error(codes::INTERRUPTED, "interrupted before the new tree was committed; the previous tree is unchanged")
        .help("nothing was written; compile again")
}

/// This run's writes as (staged name, output path).
fn staged<'w>(
    writes: impl Iterator<Item = io::Result<std::borrow::Cow<'w, str>>>,
) -> impl Iterator<Item = io::Result<(String, std::borrow::Cow<'w, str>)>> {
    writes.map(|rel| rel.map(|rel| (format!("{TREE}/{rel}"), rel)))
}

/// Writes a journal as [`Committed`] reads it: `{"writes":[[staged name, path], …],
/// "deletes":[[path, hash], …]}`, the writes as they come; how many there are.
fn write_journal<'w>(
    w: &mut impl Write,
    writes: impl Iterator<Item = io::Result<(String, std::borrow::Cow<'w, str>)>>,
    deletes: &[(String, String)],
) -> io::Result<usize> {
    w.write_all(br#"{"writes":["#)?;
    let mut count = 0;
    for write in writes {
        let (name, rel) = write?;
        if count > 0 {
            w.write_all(b",")?;
        }
        serde_json::to_writer(&mut *w, &(name, &*rel))?;
        count += 1;
    }
    w.write_all(br#"],"deletes":"#)?;
    serde_json::to_writer(&mut *w, deletes)?;
    w.write_all(b"}")?;
    Ok(count)
}

/// Carries out a committed journal's `writes` (staged name, output path) and `deletes`,
/// then removes the staging: `fresh` when this run staged it, else a killed run's (whose
/// staged entries are checked first).
fn apply<'j>(
    out: &Path,
    writes: impl Iterator<Item = io::Result<(String, std::borrow::Cow<'j, str>)>>,
    deletes: &[(String, String)],
    fresh: bool,
) -> Result<(), Diagnostic> {
    let dir = out.join(STAGE);
    let failed = |d: Diagnostic| {
        let msg = format!("{}; the write was committed and the next compile into this directory completes it", d.message);
        Diagnostic { message: msg, ..d }
    };
    // Directories already made or seen on the way to earlier files (nothing else writes
    // the tree meanwhile: it is locked), and those moved into place whole. Only those on
    // the way to the file at hand are kept: this run's writes come in path order, so the
    // files in a directory come one after another (a killed older run's may not, and then
    // a directory is only looked at again).
    let mut made = std::collections::HashSet::new();
    let mut moved = std::collections::HashSet::new();
    let mut staged_dirs = disk::Dirs::default();
    for write in writes {
        let (name, rel) = write.map_err(|e| failed(io("read back the journal of", &dir, e)))?;
        let rel = &*rel;
        let on_the_way = |d: &String| rel.strip_prefix(d.as_str()).is_some_and(|r| r.starts_with('/'));
        made.retain(on_the_way);
        moved.retain(on_the_way);
        let staged = dir.join(&name);
        // A journal left behind (perhaps committed by someone else) moves regular files
        // reached through real directories only; what this run staged itself is known to
        // be one, in a staging tree that is its own, so a directory the tree does not have
        // is moved into place with all that is staged in it.
        if !fresh {
            if !matches!(disk::inspect_in(&dir, &name, &mut staged_dirs), Ok(Found::File(_))) {
                continue;
            }
            make_parents(out, rel, &mut made).map_err(failed)?;
        } else {
            match way_to(out, rel, &mut made, &moved).map_err(failed)? {
                Way::There => {}
                Way::Moved => continue,
                Way::Missing(new) => {
                    fs::rename(dir.join(TREE).join(&new), out.join(&new)).map_err(|e| failed(io("move into place", &out.join(&new), e)))?;
                    moved.insert(new);
                    continue;
                }
            }
        }
        match fs::rename(&staged, out.join(rel)) {
            Ok(()) => {}
            // Moved already, by the run this one completes.
            Err(e) if e.kind() == io::ErrorKind::NotFound && fs::symlink_metadata(&staged).is_err() => {}
            Err(e) => return Err(failed(io("replace", &out.join(rel), e))),
        }
    }
    for (rel, hash) in deletes {
        if !is_safe_relative(rel) {
            continue;
        }
        if let Ok(Contents::Bytes(b)) = disk::read(out, rel, disk::MAX_OUTPUT)
            && sha256_hex(&b) == *hash
        {
            fs::remove_file(out.join(rel)).map_err(|e| failed(io("remove stale file", &out.join(rel), e)))?;
            remove_empty_parents(out, rel);
        }
    }
    fs::remove_dir_all(&dir).map_err(|e| io("remove staging", &dir, e))
}

/// The directories on the way to a file this run staged, as the tree has them.
enum Way {
    /// Every one is there: the file is renamed into place.
    There,
    /// One was moved into place whole, with the file.
    Moved,
    /// The outermost one the tree does not have, to be moved into place whole.
    Missing(String),
}

/// [`Way`] to `rel` (`made` holds the directories already seen, `moved` those moved into
/// place; any component that is not a directory is refused).
fn way_to(
    out: &Path,
    rel: &str,
    made: &mut std::collections::HashSet<String>,
    moved: &std::collections::HashSet<String>,
) -> Result<Way, Diagnostic> {
    let parts: Vec<&str> = rel.split('/').collect();
    for i in 0..parts.len() - 1 {
        let dir = parts[..=i].join("/");
        if moved.contains(&dir) {
            return Ok(Way::Moved);
        }
        if made.contains(&dir) {
            continue;
        }
        let path = out.join(&dir);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => {}
            Ok(m) => return Err(blocked(out, &dir, Kind::of(&m))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Way::Missing(dir)),
            Err(e) => return Err(io("inspect", &path, e)),
        }
        made.insert(dir);
    }
    Ok(Way::There)
}

/// Creates the directories on the way to `rel`, refusing any component that is not one;
/// `made` holds those this apply already made or saw.
fn make_parents(out: &Path, rel: &str, made: &mut std::collections::HashSet<String>) -> Result<(), Diagnostic> {
    // Nothing was moved into place whole: the walk stops at each missing directory.
    while let Way::Missing(dir) = way_to(out, rel, made, &std::collections::HashSet::new())? {
        let path = out.join(&dir);
        fs::create_dir(&path).map_err(|e| io("create directory", &path, e))?;
        made.insert(dir);
    }
    Ok(())
}

/// Removes directories left empty by a deleted file, up to (not including) `out`.
fn remove_empty_parents(out: &Path, rel: &str) {
    let mut parts: Vec<&str> = rel.split('/').collect();
    parts.pop();
    while !parts.is_empty() {
        // remove_dir never follows a symlink and fails on a non-empty directory.
        if fs::remove_dir(out.join(parts.join("/"))).is_err() {
            break;
        }
        parts.pop();
    }
}

/// SIGINT, SIGTERM and SIGHUP set the returned flag instead of killing the process, so a
/// compile stops cleanly before its commit point (exit 3, nothing written, staging
/// removed) and completes its write after it. Registered once per process; `compile`
/// calls it first thing so an interruption at any time is handled.
pub(crate) fn watch_signals() -> Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
            // A second signal ends the process at once (exit 3), as users expect of a
            // second Ctrl-C; a killed write is completed or rolled back by the next run.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 3, flag.clone());
            let _ = signal_hook::flag::register(sig, flag.clone());
        }
        flag
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_on_disk_names_each_write_by_its_staged_path() {
        // The names are not kept in memory; on disk each write is still a (staged name,
        // path) pair, so a killed run's (of this clawc or an older one, whose names were
        // positions) is completed alike.
        let mut listing = crate::lock::Listing::new(usize::MAX);
        listing.push("context/a/tools.json".into(), [0; 32]);
        let written = Written { outputs: listing.finish(), lock: true, count: None };
        let deletes = vec![("old".to_string(), "ab".to_string())];
        let mut bytes = Vec::new();
        assert_eq!(write_journal(&mut bytes, staged(written.applied()), &deletes).unwrap(), 2);
        assert_eq!(
            bytes,
            br#"{"writes":[["t/context/a/tools.json","context/a/tools.json"],["t/clawc.lock","clawc.lock"]],"deletes":[["old","ab"]]}"#
        );
        let read: Committed = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            read.writes,
            staged(written.applied()).map(|w| w.map(|(n, rel)| (n, rel.into_owned()))).collect::<io::Result<Vec<_>>>().unwrap()
        );
        assert_eq!(read.deletes, deletes);
        // The summary lists the lock in its place in path order, the journal last.
        assert_eq!(written.to_vec(), ["clawc.lock", "context/a/tools.json"]);
        assert_eq!(written.len(), 2, "counted when the journal did not count them");
        assert!(read.writes.iter().all(|(n, rel)| is_staged_name(n, rel)));
        for (name, rel) in [("12", "a/b"), ("t/a/b", "a/b")] {
            assert!(is_staged_name(name, rel), "{name}");
        }
        for (name, rel) in
            [("t/a/c", "a/b"), ("t/../a/b", "a/b"), ("x/a/b", "a/b"), ("t", "a/b"), ("", "a/b"), ("1a", "a/b"), ("ta/b", "a/b")]
        {
            assert!(!is_staged_name(name, rel), "{name}");
        }
    }

    /// A lock longer than the write holds is parsed and hashed as it is read: the same
    /// digest, counts and outputs as read whole, and unreadable where read whole it is.
    #[test]
    fn a_lock_read_as_a_stream_is_the_lock_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let hash = |i: usize| format!("{:064x}", i * 7919);
        let outputs: Vec<String> =
            (0..300).rev().map(|i| format!(r#"{{"path":"context/a-{i:03}/tools.json","sha256":"{}","extra":[1]}}"#, hash(i))).collect();
        let inputs = r#"[{"path":"claw-pod.yml","role":"pod","sha256":null},{"path":"d.json","role":"descriptor","sha256":"x"}]"#;
        let good = format!(
            r#"{{"version":1,"outputs":[{},{{"path":"../out","sha256":"{}"}}],"inputs":{inputs},"secrets":"redact","x":{{"y":[]}}}}"#,
            outputs.join(",\n"),
            hash(1)
        );
        let view = |p: &Previous| match p {
            Previous::Lock(l) => {
                let mut outputs: Vec<_> =
                    l.outputs.iter().map(|e| e.map(|(p, i, d)| (p.into_owned(), i, d))).collect::<io::Result<_>>().unwrap();
                outputs.sort();
                Some((l.digest, l.inputs, l.listed, l.described, l.redacted, outputs))
            }
            _ => None,
        };
        fs::write(out.join(LOCK), &good).unwrap();
        let whole = view(&previous_lock(out, usize::MAX, None).unwrap()).expect("a lock");
        assert_eq!((whole.0, whole.1, whole.2, whole.5.len()), (crate::output::record::lock_digest(good.as_bytes()), 2, 301, 300));
        for held in [1, 500, good.len() - 1] {
            assert_eq!(view(&previous_lock(out, held, None).unwrap()).as_ref(), Some(&whole), "held {held}");
        }
        let cut = &good[..good.len() - 1];
        let unreadable = [
            cut.to_string(),
            format!("{good} x"),
            good.replacen(r#""secrets":"redact""#, r#""secrets":"redact","outputs":[]"#, 1),
            good.replacen(r#""secrets":"redact","#, "", 1),
            good.replacen(r#""sha256":"0"#, r#""sha256":0"#, 1),
        ];
        for bad in unreadable {
            fs::write(out.join(LOCK), &bad).unwrap();
            for held in [usize::MAX, 1] {
                assert!(matches!(previous_lock(out, held, None).unwrap(), Previous::Unreadable), "held {held}: {}", &bad[bad.len() - 40..]);
            }
        }
        assert!(fs::read_dir(out).unwrap().count() == 1, "nothing left beside the lock");
    }

    /// The trading-desk example compiled into `writer`, finished, and a clock tick waited
    /// out (a file stamped in its record's own tick is never vouched for).
    fn desk_into(mut writer: Writer<'_>) -> WriteSummary {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
        let opts = crate::Options { pod: example.join("claw-pod.yml"), jobs: 1, ..Default::default() };
        let (compiled, refused) = crate::compile_into(&opts, &mut writer);
        assert!(refused.is_none() && !compiled.diagnostics.has_errors(), "{:?}", compiled.diagnostics);
        let summary = writer.finish(&compiled.secrets).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        summary
    }

    /// A lock the stat record vouches for is read from the record's copy, which gives what
    /// the lock gives read whole (its digest too), at any budget of the table; a lock
    /// changed since (here, written again with the same bytes: a new stamp) is read from
    /// the file, and so is one whose record does not read back whole.
    #[test]
    fn a_lock_the_record_vouches_for_is_read_from_its_copy_as_from_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        let compile = || desk_into(Writer::new(&out, WriteOptions { records: Some(&records), jobs: 1, ..Default::default() }, true));
        // The second compile stamps the lock the first wrote, past the first's clock tick.
        compile();
        compile();
        let at = crate::disk::cache_path(&records, &out, &[]).unwrap();
        let view = |p: &Previous| match p {
            Previous::Lock(l) => {
                let outputs: Vec<_> =
                    l.outputs.iter().map(|e| e.map(|(p, i, d)| (p.into_owned(), i, d))).collect::<io::Result<_>>().unwrap();
                Some((l.digest, l.inputs, l.listed, l.described, l.redacted, outputs))
            }
            _ => None,
        };
        let sorted = |v: Option<(_, _, _, _, _, Vec<_>)>| v.map(|mut v| (v.5.sort(), v).1);
        let whole = sorted(view(&previous_lock(&out, usize::MAX, None).unwrap())).expect("a lock");
        assert_eq!(whole.0, crate::output::record::lock_digest(&fs::read(out.join(LOCK)).unwrap()));
        assert!(whole.2 > 10 && whole.5.len() == whole.2, "{} outputs", whole.2);
        for held in [usize::MAX, 1, 500] {
            let copied = copied_lock(&out, &at, held).expect("read from the copy").unwrap();
            assert!(matches!(&copied, Previous::Lock(l) if l.stamp.is_some()));
            assert_eq!(sorted(view(&copied)).as_ref(), Some(&whole), "held {held}");
            assert_eq!(sorted(view(&previous_lock(&out, held, Some(&at)).unwrap())).as_ref(), Some(&whole), "held {held}");
        }
        let lock = fs::read(out.join(LOCK)).unwrap();
        // Other bytes are not the ones copied.
        fs::write(out.join(LOCK), [&lock[..], b"\n"].concat()).unwrap();
        assert!(copied_lock(&out, &at, usize::MAX).is_none(), "another lock is not the one copied");
        // The same bytes stamped anew are, by their digest, but not vouched for by the record.
        fs::write(out.join(LOCK), &lock).unwrap();
        let again = copied_lock(&out, &at, usize::MAX).expect("the copy of these very bytes").unwrap();
        assert!(matches!(&again, Previous::Lock(l) if !l.copied), "not vouched for");
        assert_eq!(sorted(view(&again)).as_ref(), Some(&whole));
        assert_eq!(sorted(view(&previous_lock(&out, 1, Some(&at)).unwrap())).as_ref(), Some(&whole));
        // A compile that writes nothing but read the lock from the file stamps it in its
        // record again, so the next reads the copy again.
        let summary = compile();
        assert!(summary.written.is_empty() && summary.vouched + 1 == summary.unchanged, "{summary:?}");
        assert!(copied_lock(&out, &at, usize::MAX).is_some(), "the lock stamped in the record again");
        // One that finds everything vouched for, the lock by the copy, leaves the record be.
        use std::os::unix::fs::MetadataExt;
        let stored = |at: &Path| fs::symlink_metadata(at).map(|m| (m.ino(), m.mtime(), m.mtime_nsec())).unwrap();
        let before = stored(&at);
        let summary = compile();
        assert!(summary.written.is_empty() && summary.vouched == summary.unchanged, "{summary:?}");
        assert_eq!(stored(&at), before, "the record is not stored again");
        // A record cut short reads back as no record.
        let record = fs::read(&at).unwrap();
        fs::write(&at, &record[..record.len() - 1]).unwrap();
        assert!(copied_lock(&out, &at, usize::MAX).is_none());
        let names: Vec<String> = fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(!names.iter().any(|n| n.starts_with('.')), "nothing left beside the tree: {names:?}");
    }

    /// A service the read-ahead vouched for is taken whether it held the service's files
    /// (within its budget) or only found them vouched for (past it): the same services,
    /// every file vouched for, nothing written, as without a read-ahead.
    #[test]
    fn a_service_looked_at_ahead_is_taken_held_or_not() {
        use super::super::ahead::{Looked, Target, read_unlocked};
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        let compile = |held: usize, ahead: bool| {
            let mut writer = Writer::new(&out, WriteOptions { records: Some(&records), jobs: 1, held, ..Default::default() }, true);
            if ahead {
                let target = Target {
                    out: out.clone(),
                    redacted: true,
                    records: Some(records.clone()),
                    untrusted: Vec::new(),
                    held: writer.opts.previous_held(),
                };
                let read = read_unlocked(&target).expect("read ahead");
                assert!(!read.looked.is_empty());
                for looked in read.looked.values() {
                    assert_eq!(matches!(looked, Looked::Vouched(Some(_))), held == 0, "{looked:?}");
                    assert!(looked.vouched());
                }
                writer.ahead = Some(Ahead::ready(read));
            }
            desk_into(writer)
        };
        for _ in 0..3 {
            compile(0, false);
        }
        let plain = compile(0, false);
        assert!(plain.reused > 0 && plain.written.is_empty() && plain.vouched == plain.unchanged, "{plain:?}");
        for held in [0, 64] {
            let ahead = compile(held, true);
            let counts = |s: &WriteSummary| (s.reused, s.unchanged, s.vouched, s.written.len(), s.removed.len());
            assert_eq!(counts(&ahead), counts(&plain), "held {held}");
        }
    }

    /// The lock found when `--out` is opened is taken as current by its digest only while
    /// it keeps the stamp it was read with, and only if it was not changed within the
    /// clock tick before it was read.
    #[test]
    fn a_lock_is_current_unread_only_with_the_stamp_it_was_read_with() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let bytes = br#"{"secrets":"redact","inputs":[],"outputs":[]}"#;
        let sha = crate::output::record::lock_digest(bytes);
        std::fs::write(out.join(LOCK), bytes).unwrap();
        // Stamped at or after the clock's tick when it is read (here, in the future): never
        // taken unread.
        let future = std::time::SystemTime::now() + std::time::Duration::from_secs(10);
        std::fs::File::options().write(true).open(out.join(LOCK)).unwrap().set_modified(future).unwrap();
        let racy = previous_lock(out, usize::MAX, None).unwrap();
        let meta = std::fs::symlink_metadata(out.join(LOCK)).unwrap();
        assert!(!racy.lock_is(&sha, &meta), "changed in the tick it was read");
        // Older than the clock's tick when read: taken while its stamp holds.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
        std::fs::File::options().write(true).open(out.join(LOCK)).unwrap().set_modified(old).unwrap();
        // Its status change time (now) a clock tick (at most 10 ms) older than the read.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let read = previous_lock(out, usize::MAX, None).unwrap();
        let meta = std::fs::symlink_metadata(out.join(LOCK)).unwrap();
        assert!(read.lock_is(&sha, &meta));
        assert!(!read.lock_is(&crate::output::record::lock_digest(b"other"), &meta), "another digest");
        // Edited after it was read, to the same bytes and modification time: its status
        // change time moved, so it is read again.
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::write(out.join(LOCK), bytes).unwrap();
        std::fs::File::options().write(true).open(out.join(LOCK)).unwrap().set_modified(old).unwrap();
        let meta = std::fs::symlink_metadata(out.join(LOCK)).unwrap();
        assert!(!read.lock_is(&sha, &meta), "edited since it was read");
    }

    /// A writer says how many outputs the lock in `--out` lists once it has opened it
    /// (when the compile asks what it may reuse): the compile sizes its list by it.
    #[test]
    fn a_writer_tells_how_many_outputs_the_previous_lock_lists() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
        let opts = crate::Options { pod: example.join("claw-pod.yml"), jobs: 1, ..Default::default() };
        let write = || WriteOptions { records: Some(&records), jobs: 1, ..Default::default() };
        let mut writer = Writer::new(&out, write(), true);
        let (compiled, _) = crate::compile_into(&opts, &mut writer);
        assert_eq!(writer.listed(), 0, "no lock in a fresh --out");
        writer.finish(&compiled.secrets).unwrap();
        let b = std::fs::read(out.join(LOCK)).unwrap();
        let n = serde_json::from_slice::<LockView<'_>>(&b).unwrap().outputs.len();
        assert!(n > 5, "{n}");
        let mut writer = Writer::new(&out, write(), true);
        assert_eq!(writer.listed(), 0, "not opened yet");
        let _ = writer.reuse(&[]);
        assert_eq!(writer.listed(), n);
    }
}
