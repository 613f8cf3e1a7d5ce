//! Reading ahead: what the previous compile left in `--out` (its lock, stat record and
//! render memo) read, and the files of the memo's services looked at, on a thread of
//! their own while the inputs are still being parsed and described, instead of after.
//!
//! None of it depends on the new compile. A recompile of a big pod otherwise waits for it
//! once the render keys are known: at 3,000 agent ids, reading the 1.4 MB lock is about
//! 7 ms and the `lstat`s of the 9,301 files the memo lists 15–22 ms on both cores, while
//! parsing the pod, registering the descriptors and resolving the grants run on one.
//!
//! It only reads. It holds the write lock (`flock`) of `--out` from the moment it looks,
//! as the write would, and gives up, leaving everything to the write as before, when
//! `--out` is not already a real directory, another compile holds the lock, or a killed
//! run left staging to recover. The write stops it when it needs what it read, so a
//! compile whose render keys all changed does not wait for looks it cannot use: what was
//! not looked at yet is looked at then, as without it.
//!
//! It runs at the compile's own priority. At the lowest (`nice` 19, as first built), a
//! machine whose cores were busy with other work kept it waiting while the compile, at
//! normal priority, waited for it: the one-agent recompile at 3,000 agent ids took 3.3×
//! as long as with `--jobs 1`, and still about 1.5× when the write waited at most a
//! millisecond for it and then read for itself (what the preempted thread held, the
//! compile needed too: in the kernel, it seems). At normal priority it is faster than
//! `--jobs 1` there. On an idle machine it then cost a compile whose render keys all
//! changed about 8 % (every look wasted, on a core the compile's own threads wanted), so
//! the compile tells it the digest of the descriptors it read as soon as they are read
//! ([`Ahead::described`]): when that is not the previous lock's, every key has changed,
//! and it stops looking (`docs/performance.md`).

use super::known::Known;
use super::memo::{Seal, Stored};
use super::write::{Previous, STAGE, check_names, known_and_memo, open_for_lock, previous_lock};
use foldhash::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

/// A read ahead under way (see the module docs); stopped and joined when dropped.
pub(crate) struct Ahead {
    stop: Arc<AtomicBool>,
    /// What the compile told of the descriptors it read ([`Ahead::described`]).
    described: Arc<OnceLock<[u8; 32]>>,
    thread: Option<JoinHandle<Option<Read>>>,
    /// What was read before the compile began ([`Ahead::ready`]).
    ready: Option<Read>,
}

/// What was read ahead: what the write would read when it opens `--out`, and the looks
/// at the memo's services it had time for.
pub(crate) struct Read {
    /// The `flock` on `--out`, handed to the write.
    pub flock: fs::File,
    pub previous: Previous,
    pub known: Known,
    pub memo: Option<(Stored, Seal)>,
    /// The memo services looked at, and whether the record vouches for every one of their
    /// files. (Not their stamps: a file it vouches for is stamped as the record says, which
    /// is where the next record takes its stamp from; at 30,000 agent ids the stamps
    /// themselves would hold 5.6 MB while the inputs are compiled.)
    pub looked: HashMap<String, Looked>,
}

/// A memo service looked at ahead.
#[derive(Debug)]
pub(crate) enum Looked {
    /// A file of it is not vouched for: it is rendered again.
    Changed,
    /// Every file of it vouched for. Within half the read-ahead's budget (`Target::held`),
    /// with what the write would decode and look up again to take it ([`Held`]); past
    /// that, only this (the write does both, as for a service not looked at).
    Vouched(Option<Held>),
}

/// A service vouched for, as the write takes it: the render key and files the memo has
/// for it, and where the previous lock lists each file, with its hash. (At 3,000 agent
/// ids, decoding the memo's files and looking each up in the table again took 2.8 ms of
/// the watched one-agent edit's 34.)
#[derive(Debug)]
pub(crate) struct Held {
    pub key: [u8; 32],
    pub files: Vec<crate::artifact::Recorded>,
    pub at: Vec<(usize, [u8; 32])>,
}

impl Looked {
    pub(crate) fn vouched(&self) -> bool {
        matches!(self, Looked::Vouched(_))
    }
}

/// The `--out` to read ahead, and how the write will look at it (owned by the thread).
pub(crate) struct Target {
    pub out: PathBuf,
    pub redacted: bool,
    pub records: Option<PathBuf>,
    pub untrusted: Vec<PathBuf>,
    /// How much of the previous lock's outputs table is held ([`super::write::WriteOptions::held`]).
    pub held: usize,
}

impl Ahead {
    /// Starts reading ahead on a thread of its own.
    pub(crate) fn start(target: Target) -> Ahead {
        let stop = Arc::new(AtomicBool::new(false));
        let described = Arc::new(OnceLock::new());
        let (stopping, told) = (Arc::clone(&stop), Arc::clone(&described));
        let thread = std::thread::Builder::new().name("clawc-ahead".into()).spawn(move || read(&target, &stopping, &told)).ok();
        Ahead { stop, described, thread, ready: None }
    }

    /// What was read before the compile began (see [`super::idle`]), handed to the write as
    /// a read ahead that has finished.
    pub(crate) fn ready(read: Read) -> Ahead {
        Ahead { stop: Arc::default(), described: Arc::default(), thread: None, ready: Some(read) }
    }

    /// The digest of the descriptors the compile read (`lock::described_digest`): when it
    /// is not the previous lock's, every render key has changed but by chance, and the
    /// files are no longer looked at (a descriptor edited would otherwise have them all
    /// looked at for nothing, on a core the compile's own threads want).
    pub(crate) fn described(&self, digest: [u8; 32]) {
        let _ = self.described.set(digest);
    }

    /// Stops looking and returns what was read, if `--out` could be read ahead at all.
    pub(crate) fn finish(mut self) -> Option<Read> {
        if let Some(read) = self.ready.take() {
            return Some(read);
        }
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take()?.join().ok().flatten()
    }
}

impl Drop for Ahead {
    /// A compile that failed before writing: the thread stops after the service it is
    /// looking at, and its `flock` is released before the writer is gone.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads `target` as [`Ahead::start`] does, every service looked at, on this thread, and
/// gives the `flock` back at the end: for a compile that has not begun (see
/// [`super::idle`]), which takes the lock again before it uses what was read.
pub(crate) fn read_unlocked(target: &Target) -> Option<Read> {
    let read = read(target, &AtomicBool::new(false), &OnceLock::new())?;
    read.flock.unlock().ok()?;
    Some(read)
}

fn read(target: &Target, stop: &AtomicBool, described: &OnceLock<[u8; 32]>) -> Option<Read> {
    let out = target.out.as_path();
    // Not following a symlinked `--out`, nor waiting for another compile: the write does
    // both as it always has.
    let flock = open_for_lock(out).ok()?;
    flock.try_lock().ok()?;
    if out.join(STAGE).symlink_metadata().is_ok() {
        return None;
    }
    let untrusted: Vec<&Path> = target.untrusted.iter().map(PathBuf::as_path).collect();
    let record = super::known::record_at(out, target.redacted, target.records.as_deref(), &untrusted);
    let previous = previous_lock(out, target.held, record.as_deref()).ok()?;
    let Previous::Lock(old) = &previous else { return None };
    let (known, memo) = known_and_memo(out, Some(old), target.redacted, target.records.as_deref(), &untrusted);
    let changed = || stop.load(Ordering::Relaxed) || described.get().is_some_and(|d| *d != old.described);
    let budget = target.held / 2;
    let looked = memo.as_ref().map(|(m, _)| look(out, m, &old.outputs, &known, budget, &changed)).unwrap_or_default();
    Some(Read { flock, previous, known, memo, looked })
}

/// The memo's services in order, each looked at whole, until `stop` says so; those
/// vouched for held as the write takes them while they fit in `budget` bytes.
fn look(
    out: &Path,
    memo: &Stored,
    previous: &super::write::Outputs,
    known: &Known,
    mut budget: usize,
    stop: &dyn Fn() -> bool,
) -> HashMap<String, Looked> {
    let mut looked = HashMap::default();
    let Some(mut walk) = known.walk(out) else { return looked };
    for service in memo.services() {
        if stop() {
            break;
        }
        // A service whose files cannot be read back is not looked at (nor taken).
        let Some((key, files)) = memo.files(service) else { continue };
        // A memo naming an unsafe path is not taken from (the write says so again).
        if check_names(files.iter().map(|f| &*f.path)).is_err() {
            continue;
        }
        let at: Option<Vec<_>> = files.iter().map(|f| known.looks_recorded(&mut walk, previous, f)).collect();
        let found = match at {
            None => Looked::Changed,
            Some(at) => {
                let size = files.iter().map(|f| HELD_PER_FILE + f.path.len()).sum::<usize>();
                let fits = size <= budget;
                Looked::Vouched(fits.then(|| {
                    budget -= size;
                    Held { key, files, at }
                }))
            }
        };
        looked.insert(service.to_string(), found);
    }
    looked
}

/// What [`Held`] takes per file beside its path: the memo's entry, the path's `Arc`
/// header, the index and hash.
const HELD_PER_FILE: usize = size_of::<crate::artifact::Recorded>() + 16 + size_of::<(usize, [u8; 32])>();

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::write::{WriteOptions, Writer};
    use std::os::unix::fs::OpenOptionsExt;
    use std::time::Duration;

    /// The trading-desk example compiled into `out` with its record and memo in `records`,
    /// twice, a clock tick apart and then another: the second compile's record vouches for
    /// every file (a file stamped in its record's own tick never is: racy git).
    fn settled(out: &Path, records: &Path) {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
        let opts = crate::Options { pod: example.join("claw-pod.yml"), jobs: 1, ..Default::default() };
        for _ in 0..2 {
            let mut writer = Writer::new(out, WriteOptions { records: Some(records), jobs: 1, ..Default::default() }, true);
            let (compiled, refused) = crate::compile_into(&opts, &mut writer);
            assert!(refused.is_none() && !compiled.diagnostics.has_errors(), "{:?}", compiled.diagnostics);
            writer.finish(&compiled.secrets).unwrap();
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    fn target(out: &Path, records: &Path) -> Target {
        Target {
            out: out.to_path_buf(),
            redacted: true,
            records: Some(records.to_path_buf()),
            untrusted: Vec::new(),
            held: crate::output::write::PREVIOUS_HELD,
        }
    }

    /// What `--out` holds, by path (a symlink by its target).
    fn listing(root: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        let mut all = Vec::new();
        let mut dirs = vec![root.to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let m = p.symlink_metadata().unwrap();
                if m.is_dir() {
                    dirs.push(p.clone());
                }
                all.push((p.clone(), m.is_file().then(|| fs::read(&p).unwrap())));
            }
        }
        all.sort();
        all
    }

    #[test]
    fn it_looks_at_every_memo_service_and_finds_the_one_edited_behind_its_back() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        settled(&out, &records);
        let read = super::read(&target(&out, &records), &AtomicBool::new(false), &OnceLock::new()).expect("a settled tree is read ahead");
        let (memo, _) = read.memo.as_ref().expect("the memo is read");
        let services: Vec<String> = memo.services().map(str::to_string).collect();
        assert!(services.len() >= 2, "the example has agent services: {services:?}");
        assert_eq!(read.looked.len(), services.len(), "every service looked at");
        let Previous::Lock(old) = &read.previous else { panic!("a lock") };
        for service in &services {
            // Held as the write takes it: the memo's key and files, each where the lock lists it.
            let Looked::Vouched(Some(held)) = &read.looked[service] else { panic!("{service}: not vouched for and held") };
            assert_eq!(memo.files(service), Some((held.key, held.files.clone())));
            let at: Vec<_> = held.files.iter().map(|f| old.outputs.get(&f.path).map(|(i, d)| (i, d.unwrap()))).collect();
            assert_eq!(at, held.at.iter().copied().map(Some).collect::<Vec<_>>(), "{service}");
        }
        let edited = &services[0];
        let (_, files) = memo.files(edited).unwrap();
        drop(read);
        // Past the budget, only vouched for (the write decodes and looks up for itself).
        let tight = super::read(&Target { held: 64, ..target(&out, &records) }, &AtomicBool::new(false), &OnceLock::new()).unwrap();
        assert!(tight.looked.values().all(|l| matches!(l, Looked::Vouched(None))) && tight.looked.len() == services.len());
        drop(tight);
        // One file of one service changed with its size and mtime kept: only that service
        // is not vouched for.
        let path = out.join(&*files[0].path);
        let (bytes, mtime) = (fs::read(&path).unwrap(), fs::metadata(&path).unwrap().modified().unwrap());
        let mut forged = bytes.clone();
        forged[0] ^= 1;
        fs::write(&path, &forged).unwrap();
        fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
        let read = super::read(&target(&out, &records), &AtomicBool::new(false), &OnceLock::new()).unwrap();
        for (service, looked) in &read.looked {
            assert_eq!(looked.vouched(), service != edited, "{service}");
        }
    }

    /// The compile tells the digest of the descriptors it read: the one the lock it
    /// writes records, so a recompile of unchanged descriptors looks at every file, and
    /// one of an edited descriptor at none.
    #[test]
    fn it_stops_looking_when_the_descriptors_are_not_the_previous_compiles() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        settled(&out, &records);
        let Ok(Previous::Lock(old)) = previous_lock(&out, usize::MAX, None) else { panic!("a lock") };
        // What a compile of the same pod tells its sink.
        struct Told(crate::artifact::ArtifactSet, Option<[u8; 32]>);
        impl crate::output::sink::Sink for Told {
            fn put(&mut self, batch: Vec<crate::artifact::Output>) -> Result<(), crate::diag::Diagnostic> {
                self.0.put(batch)
            }
            fn described(&mut self, digest: [u8; 32]) {
                self.1 = Some(digest);
            }
        }
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
        let mut told = Told(Default::default(), None);
        let opts = crate::Options { pod: example.join("claw-pod.yml"), jobs: 1, ..Default::default() };
        let (compiled, _) = crate::compile_into(&opts, &mut told);
        assert!(!compiled.diagnostics.has_errors());
        assert_eq!(told.1, Some(old.described), "told what the lock records");
        let lock = crate::output::known::LockView::among(&told.0).unwrap();
        assert!(lock.inputs.iter().any(|i| i.role == "descriptor"), "the example has descriptors");
        assert_ne!(old.described, crate::lock::described_digest([]), "the digest of no descriptors");
        let read = |described: [u8; 32]| super::read(&target(&out, &records), &AtomicBool::new(false), &OnceLock::from(described)).unwrap();
        let same = read(old.described);
        assert_eq!(same.looked.len(), same.memo.as_ref().unwrap().0.services().count(), "every service looked at");
        drop(same); // its lock
        let mut edited = old.described;
        edited[0] ^= 1;
        let other = read(edited);
        assert!(other.looked.is_empty() && other.memo.is_some(), "none looked at; the rest read");
    }

    #[test]
    fn stopped_at_once_it_still_reads_what_the_write_needs() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        settled(&out, &records);
        let read = super::read(&target(&out, &records), &AtomicBool::new(true), &OnceLock::new()).unwrap();
        assert!(matches!(read.previous, Previous::Lock(_)) && read.known.has_record() && read.memo.is_some());
        assert!(read.looked.is_empty(), "nothing looked at once stopped");
    }

    /// It gives up, touching nothing and waiting for nothing, where the write has more to
    /// do than read: no `--out`, a symlinked one, staging to recover, another compile.
    #[test]
    fn it_leaves_to_the_write_what_is_not_plain_reading() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        assert!(super::read(&target(&out, &records), &AtomicBool::new(false), &OnceLock::new()).is_none());
        assert!(!out.exists(), "a missing --out is not made");
        settled(&out, &records);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&out, &link).unwrap();
        assert!(
            super::read(&target(&link, &records), &AtomicBool::new(false), &OnceLock::new()).is_none(),
            "a symlinked --out is not followed"
        );
        fs::create_dir(out.join(STAGE)).unwrap();
        fs::write(out.join(STAGE).join("0"), "staged").unwrap();
        let before = listing(&out);
        assert!(super::read(&target(&out, &records), &AtomicBool::new(false), &OnceLock::new()).is_none());
        assert_eq!(listing(&out), before, "staging is left to the write's recovery");
        fs::remove_dir_all(out.join(STAGE)).unwrap();
        let held = fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(&out).unwrap();
        held.lock().unwrap();
        let start = std::time::Instant::now();
        assert!(super::read(&target(&out, &records), &AtomicBool::new(false), &OnceLock::new()).is_none());
        assert!(start.elapsed() < Duration::from_secs(5), "it does not wait for the lock");
        drop(held);
        assert!(super::read(&target(&out, &records), &AtomicBool::new(false), &OnceLock::new()).is_some());
    }

    /// An `Ahead` dropped (the compile failed) or finished gives the lock back.
    #[test]
    fn the_write_lock_is_released_when_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        settled(&out, &records);
        let try_lock = || fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(&out).unwrap().try_lock().is_ok();
        let finished = Ahead::start(target(&out, &records)).finish().expect("read");
        assert!(!try_lock(), "held while what was read is");
        drop(finished);
        assert!(try_lock());
        drop(Ahead::start(target(&out, &records)));
        assert!(try_lock(), "released when dropped unfinished");
    }
}
