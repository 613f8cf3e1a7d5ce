//! Change notices from the kernel (inotify), for `compile --watch`: which of a compile's
//! inputs changed ([`Inputs`]), and whether anything under `--out` changed since a given
//! moment ([`Tree`]), so a watch can look at the previous tree while it waits for an edit
//! rather than after it.
//!
//! inotify reports what is done through the paths it watches: a write, a change of mode,
//! owner, link count or times, a file made, removed or renamed. A directory's watch does
//! not see a file changed through a hard link in another directory, and no watch sees a
//! write through a shared memory mapping, so [`Tree`] watches every file as well as every
//! directory, and counts a file's being opened at all as a change (a mapping is made from
//! an open file). A queue that overflowed counts as a change.

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use std::collections::HashMap;
use std::ffi::OsString;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One inotify instance (non-blocking, closed on exec).
struct Notices(OwnedFd);

impl Notices {
    fn new() -> Option<Notices> {
        inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok().map(Notices)
    }

    fn add(&self, path: &Path, flags: WatchFlags) -> rustix::io::Result<i32> {
        inotify::add_watch(&self.0, path, flags | WatchFlags::DONT_FOLLOW)
    }

    /// Reads every event queued now, handing each to `each` (its watch, what happened and
    /// the name in a watched directory); `false` when the queue could not be read.
    fn drain(&self, mut each: impl FnMut(i32, ReadFlags, Option<&[u8]>)) -> bool {
        let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
        let mut reader = inotify::Reader::new(self.0.as_fd(), &mut buf);
        loop {
            match reader.next() {
                Ok(e) => each(e.wd(), e.events(), e.file_name().map(std::ffi::CStr::to_bytes).filter(|n| !n.is_empty())),
                Err(rustix::io::Errno::AGAIN) => return true,
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return false,
            }
        }
    }

    /// Waits until an event is queued or `timeout` has passed: whether one is.
    fn wait(&self, timeout: Duration) -> bool {
        let mut fds = [rustix::event::PollFd::new(&self.0, rustix::event::PollFlags::IN)];
        let timeout = rustix::event::Timespec::try_from(timeout).ok();
        matches!(rustix::event::poll(&mut fds, timeout.as_ref()), Ok(n) if n > 0)
    }
}

/// How long a save that is whole (see [`Inputs::wait`]) is followed by nothing more
/// before the wait ends: the steps of one save, or the files of one checkout, come within
/// microseconds of each other.
const AFTER_SAVE: Duration = Duration::from_millis(1);

/// The longest [`Inputs::wait`] waits for the clock to pass a change's stamps (a few of
/// its ticks).
const TICKS: Duration = Duration::from_millis(20);

/// What changes a file or a directory's entries.
const CHANGES: WatchFlags = WatchFlags::MODIFY
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::CLOSE_WRITE)
    .union(WatchFlags::CREATE)
    .union(WatchFlags::DELETE)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO);

/// Every directory and file under a tree watched from one moment on: [`Tree::quiet`] says
/// whether anything there has changed since (reading and `lstat` do not count).
pub(crate) struct Tree(Notices);

impl Tree {
    /// Watches `root` and everything under it, not following symlinks (a symlink is
    /// watched as its directory's entry). Each directory is watched before its entries are
    /// listed, so an entry made while the tree is being watched is seen either way. A
    /// file's being opened counts, but for `read`'s (a file the watcher itself reads).
    /// `None` when the tree cannot be watched whole: an entry that cannot be read, or more
    /// than `most` watches (the user's inotify watches are shared with every other program).
    pub(crate) fn new(root: &Path, most: usize, read: &Path) -> Option<Tree> {
        let notices = Notices::new()?;
        let mut dirs = vec![root.to_path_buf()];
        let mut watches = 0usize;
        while let Some(dir) = dirs.pop() {
            watches += 1;
            if watches > most {
                return None;
            }
            notices.add(&dir, CHANGES | WatchFlags::ONLYDIR).ok()?;
            for entry in std::fs::read_dir(&dir).ok()? {
                let entry = entry.ok()?;
                let kind = entry.file_type().ok()?;
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if kind.is_file() {
                    watches += 1;
                    if watches > most {
                        return None;
                    }
                    let path = entry.path();
                    let opened = if path == read { WatchFlags::empty() } else { WatchFlags::OPEN };
                    notices.add(&path, CHANGES | opened).ok()?;
                }
            }
        }
        Some(Tree(notices))
    }

    /// Whether nothing under the tree has changed since it was watched (no event, and the
    /// queue did not overflow).
    pub(crate) fn quiet(&self) -> bool {
        let mut events = 0usize;
        self.0.drain(|_, _, _| events += 1) && events == 0
    }
}

/// How many watches a [`Tree`] may take: half the user's inotify limit, so other programs
/// watching files keep room.
pub(crate) fn tree_budget() -> usize {
    std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches").ok().and_then(|s| s.trim().parse::<usize>().ok()).unwrap_or(8192) / 2
}

/// What a [`Inputs::wait`] ended with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Waited {
    /// An input changed (and then nothing more for a moment).
    Changed(PathBuf),
    /// The stop flag was set (a signal).
    Stopped,
    /// The inputs could not be watched or read.
    Failed,
}

/// Inputs watched on their whole way: every directory from `/` to each input, by the
/// names on that way, and each input file itself, so a file replaced by rename (as editors
/// save), made, removed, written in place or through a hard link, or a directory on its
/// way renamed, swapped or made unreadable, is seen. An input is covered when all of that
/// is watched and nothing on its way is a symlink: then a change to what reading it gives
/// is reported (but for a write through a shared mapping, which no watch sees), and what
/// was read of it may be kept ([`crate::KeptReads`]).
pub(crate) struct Inputs {
    notices: Notices,
    /// Each directory's watch: the directory and the names on the way to an input
    /// (`None`: any name, for an input that is itself a directory).
    dirs: HashMap<i32, (PathBuf, Option<Vec<OsString>>)>,
    /// Each file's watch: the inputs it is (one file may have more than one path).
    files: HashMap<i32, Vec<PathBuf>>,
    covered: Vec<PathBuf>,
    /// What the events read so far changed (each path, and everything under it); `None`:
    /// anything may have (the queue overflowed or could not be read).
    changes: Option<Vec<PathBuf>>,
    /// Where the save of each path changed since [`Inputs::wait`] began stands.
    saves: HashMap<PathBuf, Save>,
    /// The file (device, inode) each watched file was as it began to be watched.
    inodes: HashMap<PathBuf, (u64, u64)>,
}

/// Where a save of one path stands, by the events seen for it since a wait began.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Save {
    /// Closed after writing, or renamed into place: whole.
    Done,
    /// Made, removed, renamed away, or only its metadata changed: a step another may
    /// follow (an editor renames the old file away before it renames the new one in).
    Stepped,
    /// Written and not yet closed: its writer may not be done.
    Writing,
}

impl Save {
    /// The state after `what` happened to the path, reported by the path's directory
    /// (`by_name`) or by the watch of the file itself. A file's own watch follows the file
    /// it was when watched: once that file is renamed away or removed (its directory says
    /// so by name), what happens to it says nothing of the path, but for a write.
    fn after(before: Option<Save>, what: ReadFlags, by_name: bool) -> Save {
        if what.intersects(ReadFlags::CLOSE_WRITE) || (by_name && what.contains(ReadFlags::MOVED_TO)) {
            Save::Done
        } else if what.contains(ReadFlags::MODIFY) {
            Save::Writing
        } else if by_name && !what.contains(ReadFlags::ATTRIB) {
            Save::Stepped
        } else {
            before.unwrap_or(Save::Stepped)
        }
    }
}

impl Inputs {
    /// Watches `paths` (absolute). `None` when no inotify instance could be made.
    pub(crate) fn new(paths: impl IntoIterator<Item = PathBuf>) -> Option<Inputs> {
        let mut watch = Inputs {
            notices: Notices::new()?,
            dirs: HashMap::new(),
            files: HashMap::new(),
            covered: Vec::new(),
            changes: Some(Vec::new()),
            saves: HashMap::new(),
            inodes: HashMap::new(),
        };
        for path in paths {
            if watch.add(&path) {
                watch.covered.push(path);
            }
        }
        Some(watch)
    }

    /// The inputs watched whole: every directory on the way and the file (or, for one
    /// that is absent, the directory where it would be made), none a symlink.
    pub(crate) fn covered(&self) -> &[PathBuf] {
        &self.covered
    }

    /// Watches `path`'s way and the file; whether it is covered.
    fn add(&mut self, path: &Path) -> bool {
        use std::path::Component;
        let mut dir = PathBuf::new();
        let mut parts = path.components().peekable();
        while let Some(part) = parts.next() {
            match part {
                Component::RootDir => dir.push(part),
                Component::Normal(name) if !dir.as_os_str().is_empty() => {
                    let Ok(wd) = self.notices.add(&dir, CHANGES | WatchFlags::ONLYDIR) else {
                        // Gone: the input is absent, and its nearest directory watched.
                        if std::fs::symlink_metadata(&dir).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
                            return true;
                        }
                        // A symlink or unreadable on the way: not covered, but a file there
                        // written in place is still seen.
                        self.add_file(path);
                        return false;
                    };
                    let (_, names) = self.dirs.entry(wd).or_insert_with(|| (dir.clone(), Some(Vec::new())));
                    if let Some(names) = names
                        && !names.iter().any(|n| n == name)
                    {
                        names.push(name.to_os_string());
                    }
                    dir.push(name);
                    if parts.peek().is_none() {
                        return self.add_last(path);
                    }
                }
                // Relative, `.` or `..`: not a way a watch can follow.
                _ => return false,
            }
        }
        false
    }

    /// The input itself: a file is watched (covered), a directory watched for any name.
    fn add_last(&mut self, path: &Path) -> bool {
        match std::fs::symlink_metadata(path) {
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            Ok(m) if m.is_file() => self.add_file(path),
            Ok(m) if m.is_dir() => {
                if let Ok(wd) = self.notices.add(path, CHANGES | WatchFlags::ONLYDIR) {
                    self.dirs.insert(wd, (path.to_path_buf(), None));
                }
                false
            }
            Ok(_) => false,
        }
    }

    /// Watches the file at `path` by itself (through any symlinked directory on the way, not
    /// a symlink at its end); whether it is.
    fn add_file(&mut self, path: &Path) -> bool {
        // Looked at before it is watched: a file put there in between is not the one
        // recorded, so it is never taken for the one watched.
        let file = std::fs::symlink_metadata(path).map(|m| (m.dev(), m.ino()));
        let Ok(wd) = self.notices.add(path, CHANGES) else { return false };
        if let Ok(file) = file {
            self.inodes.insert(path.to_path_buf(), file);
        }
        self.files.entry(wd).or_default().push(path.to_path_buf());
        true
    }

    /// Blocks until a watched input changes, then until the change is whole, or until
    /// `stop` is set. Whole: every path changed was closed after writing or renamed into
    /// place, and nothing more happened for [`AFTER_SAVE`]; a path made, removed or
    /// renamed away (one step of an editor's save), for `settle`; a path still open for
    /// writing is waited for. At most a second is waited after the first change.
    pub(crate) fn wait(&mut self, stop: &AtomicBool, settle: Duration) -> Waited {
        self.saves.clear();
        let changed = loop {
            if stop.load(Ordering::SeqCst) {
                return Waited::Stopped;
            }
            if !self.notices.wait(Duration::from_millis(100)) {
                continue;
            }
            match self.changed() {
                Some(Some(path)) => break path,
                Some(None) => {}
                None => return Waited::Failed,
            }
        };
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let quiet = match self.saving() {
                Save::Done => AFTER_SAVE,
                Save::Stepped => settle,
                Save::Writing => left,
            };
            if left.is_zero() || !self.notices.wait(quiet.min(left)) {
                break;
            }
            if self.changed().is_none() {
                return Waited::Failed;
            }
        }
        self.past_the_change();
        if stop.load(Ordering::SeqCst) { Waited::Stopped } else { Waited::Changed(changed) }
    }

    /// Waits until the clock a compile takes its start from ([`crate::disk::now`], coarse:
    /// a tick is a few milliseconds) has passed the stamps of the paths changed, at most
    /// [`TICKS`]. A compile that began in the tick of a change cannot tell it from one made
    /// after its read, so it would compile again at once.
    /// A file written in place, still the one this watch watches, need not wait: this
    /// watch, alive through the compile, tells a change during it (see
    /// [`crate::KeptReads::watch`]).
    fn past_the_change(&self) {
        let until = Instant::now() + TICKS;
        let in_place = |p: &&PathBuf| self.covered.contains(p) && self.same_file(p);
        while self.saves.keys().filter(|p| !in_place(p)).any(|p| crate::disk::stamped_since(p, crate::disk::now()))
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_micros(250));
        }
    }

    /// Whether the file at `path` is still the one watched there (same device and inode):
    /// then, for a covered input, every write to it, through any of its names, is reported.
    pub(crate) fn same_file(&self, path: &Path) -> bool {
        self.inodes.get(path).is_some_and(|f| std::fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == *f))
    }

    /// Where the saves seen since the wait began stand, taken together: the least
    /// finished of them (`Stepped` when anything may have changed).
    fn saving(&self) -> Save {
        if self.changes.is_none() {
            return Save::Stepped;
        }
        self.saves.values().copied().max().unwrap_or(Save::Stepped)
    }

    /// What changed since the last call, every event queued now included: each path
    /// changed (and everything under it); `None` when anything may have.
    pub(crate) fn take_changes(&mut self) -> Option<Vec<PathBuf>> {
        self.changed();
        self.changes.replace(Vec::new())
    }

    /// The first watched input among the events queued now (`Some(None)`: none of them
    /// is); `None` when the queue could not be read. Every change is also noted.
    fn changed(&mut self) -> Option<Option<PathBuf>> {
        let Inputs { notices, dirs, files, changes, saves, .. } = self;
        let mut first = None;
        let read = notices.drain(|wd, what, name| {
            let mut note = |path: PathBuf, by_name: bool| {
                let save = Save::after(saves.get(&path).copied(), what, by_name);
                saves.insert(path.clone(), save);
                if let Some(changes) = changes.as_mut() {
                    changes.push(path.clone());
                }
                first.get_or_insert(path);
            };
            if let Some(paths) = files.get(&wd) {
                paths.iter().for_each(|p| note(p.clone(), false));
                return;
            }
            let Some((dir, names)) = dirs.get(&wd) else {
                // An overflowed queue names no watch: anything may have changed.
                if what.contains(ReadFlags::QUEUE_OVERFLOW) {
                    *changes = None;
                    first.get_or_insert(PathBuf::new());
                }
                return;
            };
            // The directory itself: gone, or its mode or owner changed.
            let itself = what.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::IGNORED | ReadFlags::ATTRIB);
            match (name, names) {
                (_, None) => note(dir.clone(), true),
                (Some(n), Some(names)) if names.iter().any(|w| w.as_bytes() == n) => note(dir.join(std::ffi::OsStr::from_bytes(n)), true),
                (None, Some(_)) if itself => note(dir.clone(), true),
                _ => {}
            }
        });
        if !read {
            self.changes = None;
        }
        read.then_some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_tree_is_quiet_until_a_file_or_directory_in_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("out");
        fs::create_dir_all(root.join("context/a")).unwrap();
        fs::write(root.join("context/a/tools.json"), "{}").unwrap();
        fs::write(root.join("clawc.lock"), "{}").unwrap();
        type Change<'a> = (&'a str, &'a dyn Fn(&Path));
        let changes: [Change<'_>; 5] = [
            ("a file written in place", &|r| fs::write(r.join("context/a/tools.json"), "{\"x\":1}").unwrap()),
            ("a file's mode", &|r| {
                fs::set_permissions(r.join("clawc.lock"), fs::Permissions::from_mode(0o600)).unwrap();
            }),
            ("a file made", &|r| fs::write(r.join("context/a/new.json"), "").unwrap()),
            ("a file removed", &|r| fs::remove_file(r.join("context/a/tools.json")).unwrap()),
            ("a directory renamed", &|r| fs::rename(r.join("context/a"), r.join("context/b")).unwrap()),
        ];
        for (what, change) in changes {
            let _ = fs::remove_dir_all(&root);
            fs::create_dir_all(root.join("context/a")).unwrap();
            fs::write(root.join("context/a/tools.json"), "{}").unwrap();
            fs::write(root.join("clawc.lock"), "{}").unwrap();
            let tree = Tree::new(&root, 100, &root.join("clawc.lock")).expect("watched");
            // Looking, listing and reading the file named as the watcher's own are not changes.
            let _ = fs::read(root.join("clawc.lock")).unwrap();
            let _ = fs::symlink_metadata(root.join("context/a/tools.json")).unwrap();
            let _ = fs::read_dir(root.join("context/a")).unwrap().count();
            assert!(tree.quiet(), "{what}: quiet before");
            change(&root);
            assert!(!tree.quiet(), "{what}: seen");
        }
    }

    #[test]
    fn a_write_through_a_hard_link_made_after_the_watch_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("out");
        fs::create_dir_all(&root).unwrap();
        fs::write(root.join("tools.json"), "{}").unwrap();
        let other = dir.path().join("elsewhere");
        fs::hard_link(root.join("tools.json"), &other).unwrap();
        let tree = Tree::new(&root, 100, &root.join("clawc.lock")).unwrap();
        fs::write(&other, "forged").unwrap();
        assert!(!tree.quiet(), "a file is watched by itself, not only through its directory");
    }

    /// A write through a shared mapping is not reported by every kernel; the mapping needs
    /// the file opened, which is.
    #[test]
    fn a_file_opened_at_all_counts_as_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("out");
        fs::create_dir_all(&root).unwrap();
        fs::write(root.join("tools.json"), "{}").unwrap();
        let tree = Tree::new(&root, 100, &root.join("clawc.lock")).unwrap();
        let file = fs::OpenOptions::new().read(true).write(true).open(root.join("tools.json")).unwrap();
        assert!(!tree.quiet(), "opened");
        drop(file);
        let tree = Tree::new(&root, 100, &root.join("clawc.lock")).unwrap();
        assert!(tree.quiet(), "a new watch starts quiet");
        let _ = fs::read(root.join("tools.json")).unwrap();
        assert!(!tree.quiet(), "opened to read");
    }

    #[test]
    fn a_tree_bigger_than_its_budget_is_not_watched() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            fs::write(dir.path().join(format!("{i}")), "").unwrap();
        }
        let none = Path::new("");
        assert!(Tree::new(dir.path(), 6, none).is_some(), "the root and five files");
        assert!(Tree::new(dir.path(), 5, none).is_none());
        assert!(Tree::new(&dir.path().join("missing"), 100, none).is_none());
    }

    #[test]
    fn an_input_is_seen_when_written_replaced_or_made_and_others_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let pod = dir.path().join("claw-pod.yml");
        let missing = dir.path().join("not/yet/.claw-describe.json");
        fs::write(&pod, "a").unwrap();
        fs::write(dir.path().join("other"), "a").unwrap();
        let stop = AtomicBool::new(false);
        let settle = Duration::from_millis(20);
        let mut watch = Inputs::new([pod.clone(), missing.clone()]).unwrap();
        fs::write(dir.path().join("other"), "b").unwrap();
        assert!(watch.changed() == Some(None), "a file beside an input is not one");
        fs::write(&pod, "b").unwrap();
        assert_eq!(watch.wait(&stop, settle), Waited::Changed(pod.clone()));
        // Replaced by rename, as editors save.
        fs::write(dir.path().join(".claw-pod.yml.swp"), "c").unwrap();
        fs::rename(dir.path().join(".claw-pod.yml.swp"), &pod).unwrap();
        assert_eq!(watch.wait(&stop, settle), Waited::Changed(pod.clone()));
        // An input looked for and missing: its first missing directory is the name.
        fs::create_dir(dir.path().join("not")).unwrap();
        assert_eq!(watch.wait(&stop, settle), Waited::Changed(dir.path().join("not")));
        assert_eq!(watch.covered(), [pod.clone(), missing.clone()], "both watched on their whole way");
        // Through a symlinked directory: not covered, but a write in place is seen.
        fs::create_dir(dir.path().join("real")).unwrap();
        fs::write(dir.path().join("real/d.json"), "a").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        let linked = dir.path().join("link/d.json");
        let mut through = Inputs::new([linked.clone()]).unwrap();
        assert!(through.covered().is_empty(), "a symlink on the way");
        fs::write(dir.path().join("real/d.json"), "b").unwrap();
        assert_eq!(through.wait(&stop, settle), Waited::Changed(linked));
        stop.store(true, Ordering::SeqCst);
        assert_eq!(watch.wait(&stop, settle), Waited::Stopped);
    }

    /// The saves editors make, step by step: a wait ends early only once each is whole.
    #[test]
    fn a_save_is_whole_once_closed_after_writing_or_renamed_into_place() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let pod = dir.path().join("claw-pod.yml");
        let beside = |name: &str| dir.path().join(name);
        fs::write(&pod, "a").unwrap();
        let mut watch = Inputs::new([pod.clone()]).unwrap();
        let mut after = |step: &dyn Fn()| {
            step();
            assert!(watch.changed().is_some());
            watch.saving()
        };
        // Written in place: open for writing until closed.
        let mut file = fs::OpenOptions::new().write(true).truncate(true).open(&pod).unwrap();
        assert_eq!(after(&|| ()), Save::Writing, "opened with O_TRUNC, nothing closed");
        file.write_all(b"b").unwrap();
        assert_eq!(after(&|| ()), Save::Writing);
        drop(file);
        assert_eq!(after(&|| ()), Save::Done, "closed");
        assert_eq!(after(&|| fs::set_permissions(&pod, fs::Permissions::from_mode(0o640)).unwrap()), Save::Done, "its mode set after");
        // Renamed away, then a new file renamed in and the old one removed (a safe write).
        assert_eq!(after(&|| fs::rename(&pod, beside("old")).unwrap()), Save::Stepped, "gone for now");
        fs::write(beside("tmp"), "c").unwrap();
        assert_eq!(after(&|| fs::rename(beside("tmp"), &pod).unwrap()), Save::Done, "renamed into place");
        assert_eq!(after(&|| fs::remove_file(beside("old")).unwrap()), Save::Done, "the file it was, removed");
        // Removed and made again, as some editors save.
        assert_eq!(after(&|| fs::remove_file(&pod).unwrap()), Save::Stepped);
        assert_eq!(after(&|| drop(fs::File::create(&pod).unwrap())), Save::Done, "made and closed empty");
        // A symlink made in its place is a step: no close follows it.
        assert_eq!(after(&|| fs::remove_file(&pod).unwrap()), Save::Stepped);
        assert_eq!(after(&|| std::os::unix::fs::symlink("elsewhere", &pod).unwrap()), Save::Stepped);
    }

    /// A file written, paused for longer than `settle`, written again and closed: the wait
    /// ends after the close, not in the pause.
    #[test]
    fn a_wait_ends_after_a_slow_writer_closes() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let pod = dir.path().join("claw-pod.yml");
        fs::write(&pod, "a").unwrap();
        let mut watch = Inputs::new([pod.clone()]).unwrap();
        let writer = {
            let pod = pod.clone();
            std::thread::spawn(move || {
                let mut file = fs::File::create(&pod).unwrap();
                file.write_all(b"first half,").unwrap();
                std::thread::sleep(Duration::from_millis(100));
                file.write_all(b" second half").unwrap();
            })
        };
        let stop = AtomicBool::new(false);
        assert_eq!(watch.wait(&stop, Duration::from_millis(10)), Waited::Changed(pod.clone()));
        assert_eq!(fs::read_to_string(&pod).unwrap(), "first half, second half", "the wait ended in the pause");
        writer.join().unwrap();
    }

    /// Only regular files on a plain way are covered: a FIFO is never opened (watching
    /// does not open), and a way with `..` is not one a watch can follow.
    #[test]
    fn a_fifo_or_a_way_with_dot_dot_is_never_covered() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.json");
        crate::disk::mkfifo(&fifo);
        fs::create_dir(dir.path().join("a")).unwrap();
        fs::write(dir.path().join("b.json"), "{}").unwrap();
        let dotted = dir.path().join("a/../b.json");
        let plain = dir.path().join("b.json");
        let watch = Inputs::new([fifo, dotted, plain.clone()]).unwrap();
        assert_eq!(watch.covered(), [plain]);
    }
}
