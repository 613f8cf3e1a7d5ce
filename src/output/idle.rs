//! The previous tree read while a watch waits (`compile --watch`): what a read ahead
//! reads (see [`super::ahead`]: the lock, the stat record and the memo, and every file
//! of the memo's services looked at) is read as soon as a compile has written, and the
//! next compile, after an edit, starts from it instead of looking at thousands of files
//! again while it compiles.
//!
//! What was read stays true only while nothing under `--out` changes, so every directory
//! and file there is watched (see [`crate::watch::Tree`]: a change, or a file opened at
//! all but the lock, which the read opens) before anything is read. The
//! compile uses what was read only if no change was reported since, checked again once
//! it holds the lock of `--out` (another compile may have written while it waited for
//! it); otherwise it reads ahead as it would have. Between the two, the lock of `--out`
//! is not held, so other compiles into it are not kept waiting by a watch.

use super::ahead::{Read, Target, read_unlocked};
use super::write::WriteOptions;
use std::path::Path;

/// The previous tree, read and looked at while nothing under it changes.
pub struct Idle {
    tree: crate::watch::Tree,
    read: Read,
}

impl Idle {
    /// Watches everything under `out`, then reads what the previous compile left there as
    /// a writer with these options would (see [`super::write::Writer::read_ahead`]).
    /// `None` when there is nothing to read (no lock, staging left by a killed run, another
    /// compile writing) or the tree cannot be watched whole.
    pub fn prepare(out: &Path, opts: &WriteOptions<'_>, redacted: bool) -> Option<Idle> {
        // The lock is the one file under `out` the read opens.
        let tree = crate::watch::Tree::new(out, crate::watch::tree_budget(), &out.join(crate::lock::LOCK))?;
        let target = Target {
            out: out.to_path_buf(),
            redacted,
            records: opts.records.map(Path::to_path_buf),
            untrusted: opts.untrusted.iter().map(|p| p.to_path_buf()).collect(),
            held: opts.previous_held(),
        };
        let read = read_unlocked(&target)?;
        Some(Idle { tree, read })
    }

    /// What was read, with the lock of `out` taken again (waiting for another compile, as
    /// a write does), if nothing under `out` has changed since it was watched; and the
    /// watch, still open.
    pub(crate) fn take(self) -> (Option<Read>, Unwatch) {
        let Idle { tree, read } = self;
        let quiet = tree.quiet() && read.flock.lock().is_ok() && tree.quiet();
        (quiet.then_some(read), Unwatch { used: quiet, _tree: tree })
    }
}

/// The watch of `--out` an [`Idle`] kept, handed back when a compile starts from it
/// ([`super::write::Writer::read_idle`]). Closing it removes each of its watches, about
/// 16 ms for the 12,300 of a 3,000-agent tree, so drop it once the compile has been
/// reported rather than while it runs.
#[must_use = "dropping it closes the watch, which takes milliseconds: drop it after the compile"]
pub struct Unwatch {
    /// Whether the compile starts from what was read (nothing changed under `--out`).
    pub used: bool,
    _tree: crate::watch::Tree,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::write::Writer;
    use std::fs;
    use std::time::Duration;

    /// The trading-desk example compiled into `out` (records in `records`) with `idle`
    /// read before it, if any; the summary's (written, taken from the tree).
    fn compile(out: &Path, records: &Path, idle: Option<Idle>) -> (Vec<String>, usize, bool) {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
        let opts = crate::Options { pod: example.join("claw-pod.yml"), jobs: 1, ..Default::default() };
        let mut writer = Writer::new(out, WriteOptions { records: Some(records), jobs: 1, ..Default::default() }, true);
        let unwatch = idle.map(|idle| writer.read_idle(idle));
        let used = unwatch.as_ref().is_some_and(|u| u.used);
        let (compiled, refused) = crate::compile_into(&opts, &mut writer);
        assert!(refused.is_none() && !compiled.diagnostics.has_errors(), "{:?}", compiled.diagnostics);
        let w = writer.finish(&compiled.secrets).unwrap();
        (w.written.to_vec(), w.reused, used)
    }

    fn settled(out: &Path, records: &Path) {
        for _ in 0..2 {
            compile(out, records, None);
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    fn prepare(out: &Path, records: &Path) -> Idle {
        Idle::prepare(out, &WriteOptions { records: Some(records), jobs: 1, ..Default::default() }, true).expect("read while idle")
    }

    #[test]
    fn a_compile_starts_from_what_was_read_while_idle() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        settled(&out, &records);
        let idle = prepare(&out, &records);
        let lock = crate::output::write::open_for_lock(&out).unwrap();
        assert!(lock.try_lock().is_ok(), "the lock of --out is not held while idle");
        drop(lock);
        let (written, reused, used) = compile(&out, &records, Some(idle));
        assert!(used, "nothing changed: what was read is used");
        assert!(written.is_empty() && reused > 0, "every service taken from the tree: {written:?}, {reused}");
    }

    #[test]
    fn a_file_changed_while_idle_is_never_taken_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        settled(&out, &records);
        let lock: serde_json::Value = serde_json::from_slice(&fs::read(out.join("clawc.lock")).unwrap()).unwrap();
        let rel = lock["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["path"].as_str().unwrap().to_string())
            .find(|p| p.starts_with("context/") && p.ends_with("tools.json"))
            .unwrap();
        let path = out.join(&rel);
        let before = fs::read(&path).unwrap();
        let idle = prepare(&out, &records);
        // Forged with its size, times and the rest of its stamp as close as a user can
        // keep them: only the notice tells.
        let mut forged = before.clone();
        forged[0] ^= 1;
        let mtime = fs::metadata(&path).unwrap().modified().unwrap();
        fs::write(&path, &forged).unwrap();
        fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
        let (written, _, used) = compile(&out, &records, Some(idle));
        assert!(!used, "a change under --out drops what was read");
        assert!(written.iter().any(|w| **w == *rel), "the forged file is written again: {written:?}");
        assert_eq!(fs::read(&path).unwrap(), before);
    }

    #[test]
    fn nothing_is_read_while_idle_where_a_read_ahead_would_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        let opts = WriteOptions { records: Some(&records), jobs: 1, ..Default::default() };
        assert!(Idle::prepare(&out, &opts, true).is_none(), "no --out");
        settled(&out, &records);
        let held = crate::output::write::open_for_lock(&out).unwrap();
        held.lock().unwrap();
        assert!(Idle::prepare(&out, &opts, true).is_none(), "another compile holds --out");
        drop(held);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&out, &link).unwrap();
        assert!(Idle::prepare(&link, &opts, true).is_none(), "a symlinked --out");
    }
}
