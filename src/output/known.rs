//! What a compile may take as already written without reading it: an output whose new
//! hash is the one the previous `clawc.lock` records for it, and whose `lstat` the stat
//! record (see [`super::record`]) vouches for. A recompile of a big pod then reads only the
//! files whose stamp changed, not the whole tree (the 3,000-agent benchmark tree is
//! 138 MB), and after writing it leaves a record for the new lock, so the next compile or
//! `--check` does the same.
//!
//! The record is trusted as `--check` trusts it: it lives in the user cache, never in the
//! tree or the repository. Only redacted trees take part: a file holding an inline token
//! is recorded with the token masked, so equal hashes would not prove equal bytes.
//!
//! The stamps of files this run wrote are taken after it wrote them, as `git checkout`
//! records the files it writes; the record's time is read before the first of those
//! stamps, so a file changed from then on is read again. The directories that hold the
//! outputs' directories are stamped when the write opens `--out`, before it looks below
//! them, and recorded only if still so at the end: the write looked at every output's
//! directories in between (or took them through a directory the previous record vouched
//! for), so the next write may take the directories in them as real without an `lstat`.

use super::outputs::Filling;
use super::record::{self, Stamp, Stamps};
use super::write::{Outputs, PreviousLock};
use crate::artifact::ArtifactSet;
use crate::lock::LOCK;
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the previous compile's record says of the tree.
pub(crate) struct Known {
    /// The record bound to the previous lock, if there is a whole one (and both locks are
    /// redacted).
    vouched: Option<record::OnDisk>,
    /// Where the record of this `--out` is kept (`None`: no record is read or written).
    at: Option<PathBuf>,
    /// The directories holding the previous lock's outputs' directories (sorted), each
    /// with its stamp when the write opened `--out`, before it looked below any: the
    /// record this write leaves keeps the stamp of one still so at the end.
    before: Vec<(String, Option<Stamp>)>,
    /// Those the record vouches for (see [`record::trusted_directories`]): the write's
    /// walks take the directories in them as real without an `lstat` each.
    trusted: Arc<[String]>,
}

/// What the write and the record need of a lock (the new one, or the previous one found
/// in `--out`), read from its bytes without copying them (at 10,000 agents it lists
/// 31,622 outputs); its outputs as `O`.
#[derive(Deserialize)]
pub(crate) struct LockView<'a, O = Vec<OutputView<'a>>> {
    #[serde(borrow)]
    secrets: Cow<'a, str>,
    #[serde(borrow, default, deserialize_with = "lenient_inputs")]
    pub(crate) inputs: Vec<InputView<'a>>,
    pub(crate) outputs: O,
}

/// An input as a lock lists it. Every field may be missing (the lock's described digest
/// then matches no compile's): the inputs were not looked at before, and a lock whose
/// inputs are objects is read as it was.
#[derive(Deserialize)]
pub(crate) struct InputView<'a> {
    #[serde(borrow, default)]
    pub(crate) path: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) role: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) sha256: Option<Cow<'a, str>>,
}

/// The lock's inputs when they are a list of inputs, else none. They only tell the
/// read-ahead whether to go on looking (see `PreviousLock::described`), so inputs of
/// another shape must not make the lock unreadable: that would refuse the write, whose
/// proof of ownership is the outputs.
fn lenient_inputs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<InputView<'de>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Inputs<'a> {
        List(#[serde(borrow)] Vec<InputView<'a>>),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Inputs::deserialize(d)? {
        Inputs::List(list) => list,
        Inputs::Other(_) => Vec::new(),
    })
}

#[derive(Deserialize)]
pub(crate) struct OutputView<'a> {
    #[serde(borrow)]
    pub(crate) path: Cow<'a, str>,
    #[serde(borrow)]
    pub(crate) sha256: Cow<'a, str>,
}

/// What a write reads of the lock found in `--out`, as it is parsed ([`read_previous`]):
/// its outputs go straight into the table a write looks them up in (read as a list of
/// views first, the list alone was 6 MB at 30,000 agent ids), so the lock may be parsed
/// from its bytes or, too big to hold, from the file as it is read.
pub(crate) struct PreviousRead<'a> {
    pub(crate) redacted: bool,
    pub(crate) inputs: Vec<InputView<'a>>,
    /// Its outputs with a safe path, each at its index in the lock, and how many it lists.
    pub(crate) outputs: Outputs,
    pub(crate) listed: usize,
}

/// The lock `de` reads, its outputs table held up to `budget` bytes (with room made for
/// `capacity` at once) and past it on disk in a file `file` makes. Read as a [`LockView`]
/// would be (`secrets` and `outputs` needed, any other field ignored, an output that is
/// not an object with a path and a hash makes the lock unreadable: `Ok(Err(_))`); a table
/// that cannot go to disk is the outer error.
pub(crate) fn read_previous<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
    budget: usize,
    capacity: usize,
    file: &dyn Fn() -> std::io::Result<std::fs::File>,
) -> std::io::Result<serde_json::Result<PreviousRead<'de>>> {
    let mut failed = None;
    let seed = Previous { filling: Filling::new(budget, capacity, file), failed: &mut failed };
    let read = serde::de::DeserializeSeed::deserialize(seed, &mut *de).and_then(|read| de.end().map(|()| read));
    match (read, failed) {
        (_, Some(e)) => Err(e),
        (Err(e), None) => Ok(Err(e)),
        (Ok((read, filling)), None) => filling.finish().map(|outputs| Ok(PreviousRead { outputs, ..read })),
    }
}

/// The fields of a lock a write reads.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Secrets,
    Inputs,
    Outputs,
    #[serde(other)]
    Other,
}

/// A lock's inputs, read leniently ([`lenient_inputs`]).
#[derive(Deserialize)]
struct Inputs<'a>(#[serde(borrow, deserialize_with = "lenient_inputs")] Vec<InputView<'a>>);

/// Reads a lock, its outputs into a [`Filling`] as they are parsed (see [`Table`]).
struct Previous<'f, 'e> {
    filling: Filling<'f>,
    failed: &'e mut Option<std::io::Error>,
}

impl<'de, 'f> serde::de::DeserializeSeed<'de> for Previous<'f, '_> {
    type Value = (PreviousRead<'de>, Filling<'f>);

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'f> serde::de::Visitor<'de> for Previous<'f, '_> {
    type Value = (PreviousRead<'de>, Filling<'f>);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a lock")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        let Previous { filling, failed } = self;
        let (mut secrets, mut inputs, mut table) = (None::<Cow<'de, str>>, None, None);
        let mut filling = Some(filling);
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Secrets if secrets.is_none() => secrets = Some(map.next_value::<Borrowed<'de>>()?.0),
                Field::Inputs if inputs.is_none() => inputs = Some(map.next_value::<Inputs<'de>>()?.0),
                Field::Outputs => {
                    let filling = filling.take().ok_or_else(|| A::Error::duplicate_field("outputs"))?;
                    table = Some(map.next_value_seed(Table { filling, failed: &mut *failed })?);
                }
                Field::Secrets => return Err(A::Error::duplicate_field("secrets")),
                Field::Inputs => return Err(A::Error::duplicate_field("inputs")),
                Field::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let secrets = secrets.ok_or_else(|| A::Error::missing_field("secrets"))?;
        let (filling, listed) = table.ok_or_else(|| A::Error::missing_field("outputs"))?;
        let read = PreviousRead { redacted: is_redacted(&secrets), inputs: inputs.unwrap_or_default(), outputs: Outputs::new(), listed };
        Ok((read, filling))
    }
}

/// A string, borrowed from the bytes where it can be.
#[derive(Deserialize)]
struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);

/// Room for the outputs a lock's outputs text lists: one per `"path"` key, and no more
/// than a genuine entry's size allows, so a hostile text of keys alone reserves no more
/// than one of real entries of its length would fill (a path and a 64-digit hash are
/// over 80 bytes; a shorter entry is still read, into a table that grows).
pub(crate) fn capacity_for(text: &[u8]) -> usize {
    memchr::memmem::find_iter(text, b"\"path\"").count().min(text.len() / 80)
}

/// Reads a lock's outputs into an [`Outputs`] as they are parsed; a table that cannot go
/// to disk stops the parse, with the error in `failed`.
struct Table<'f, 'e> {
    filling: Filling<'f>,
    failed: &'e mut Option<std::io::Error>,
}

impl<'de, 'f> serde::de::DeserializeSeed<'de> for Table<'f, '_> {
    type Value = (Filling<'f>, usize);

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, 'f> serde::de::Visitor<'de> for Table<'f, '_> {
    type Value = (Filling<'f>, usize);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of outputs")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut listed = 0;
        while let Some(o) = seq.next_element::<OutputView<'de>>()? {
            if crate::disk::is_safe_relative(&o.path)
                && let Err(e) = self.filling.insert(&o.path, listed, crate::digest::from_hex(&o.sha256))
            {
                *self.failed = Some(e);
                return Err(serde::de::Error::custom("the table could not go to disk"));
            }
            listed += 1;
        }
        Ok((self.filling, listed))
    }
}

impl<O> LockView<'_, O> {
    /// Whether it records a redacted tree (the only kind a record is kept for).
    pub(crate) fn redacted(&self) -> bool {
        is_redacted(&self.secrets)
    }
}

impl<'a> LockView<'a> {
    /// The lock among `artifacts`, if there is one clawc can read.
    pub(crate) fn among(artifacts: &'a ArtifactSet) -> Option<LockView<'a>> {
        serde_json::from_slice(&artifacts.0.get(LOCK)?.bytes).ok()
    }

    /// Each output's hash, by path.
    pub(crate) fn hashes(&self) -> HashMap<&str, &str> {
        self.outputs.iter().map(|o| (o.path.as_ref(), o.sha256.as_ref())).collect()
    }
}

impl Known {
    /// What `old_lock` (what the lock found in `out` said) and its record under `records`
    /// (the records' directory; `None` with `--no-cache`) say of `out`, for a new tree that
    /// is `redacted` or not; `untrusted` are the directories a record may not lie in (the
    /// input root).
    pub(crate) fn load(out: &Path, old_lock: Option<&PreviousLock>, redacted: bool, records: Option<&Path>, untrusted: &[&Path]) -> Known {
        let at = record_at(out, redacted, records, untrusted);
        let vouched =
            old_lock.filter(|l| l.redacted && at.is_some()).and_then(|old| record::load(at.as_ref()?, &old.digest, old.inputs, old.listed));
        let (before, trusted) = match (old_lock.filter(|_| at.is_some()), crate::disk::Walk::new(out)) {
            (Some(old), Ok(walk)) => match count_and_parents(old.outputs.iter().map(|e| e.map(|(p, _, _)| p))) {
                Some((_, parents)) => {
                    let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
                    let (stamps, trusted) = record::trusted_directories(&walk, &parents, vouched.as_ref());
                    (parents.into_iter().map(str::to_string).zip(stamps).collect(), trusted)
                }
                // A table on disk that cannot be read back: no directory is trusted.
                None => (Vec::new(), Arc::from([])),
            },
            _ => (Vec::new(), Arc::from([])),
        };
        Known { vouched, at, before, trusted }
    }

    /// A walk of `out` that takes the directories in the ones the record vouches for as
    /// real without an `lstat` each.
    pub(crate) fn walk(&self, out: &Path) -> Option<crate::disk::Walk> {
        Some(crate::disk::Walk::new(out).ok()?.trusting(self.trusted.clone()))
    }

    /// The stamps of `parents` (the directories holding the new lock's outputs'
    /// directories) to record: each one's stamp now if it is the one it had before the
    /// write looked below it (every output's directories were looked at since, or taken
    /// through a directory the previous record vouched for), else none. A directory the
    /// write changed (it made a directory in it) is stamped by the next write or check.
    fn directory_stamps(&self, out: &Path, parents: &[&str]) -> Vec<Option<Stamp>> {
        let Ok(walk) = crate::disk::Walk::new(out) else { return vec![None; parents.len()] };
        parents
            .iter()
            .map(|dir| {
                let before = self.before.binary_search_by(|(d, _)| d.as_str().cmp(dir)).ok().and_then(|i| self.before[i].1);
                let now = walk.stat_directory(dir).map(|st| Stamp::of_stat(&st));
                now.filter(|now| before.as_ref() == Some(now))
            })
            .collect()
    }

    /// Where the render memo of this `--out` is kept (see [`super::memo`]), if a record is.
    pub(crate) fn memo_path(&self) -> Option<PathBuf> {
        self.at.as_deref().map(super::memo::path)
    }

    /// Whether a record of the previous tree was found.
    pub(crate) fn has_record(&self) -> bool {
        self.vouched.is_some()
    }

    /// Whether `rel`, found on disk with `meta`, already holds the file (with permission
    /// bits `mode`, `secret` when it holds a literal token) whose hash as the new lock
    /// records it is `sha256`, by the previous lock's `outputs` and the record, without
    /// reading it: its index among those outputs if so.
    pub(crate) fn vouches(&self, previous: &Outputs, rel: &str, mode: u32, secret: bool, sha256: &str, meta: &Metadata) -> Option<usize> {
        let (i, old) = previous.get(rel)?;
        (!secret
            && meta.permissions().mode() & 0o777 == mode
            && old.is_some()
            && old == crate::digest::from_hex(sha256)
            && self.vouches_output(i, &Stamp::of(meta)))
        .then_some(i)
    }

    /// Whether `rel`, found on disk stamped `stamp` with permission bits `found.0`, already
    /// is the file with bits `mode` whose SHA-256 the previous lock's `outputs` records, by
    /// the record, without reading it: its index among those outputs and that hash if so.
    fn vouches_recorded(&self, previous: &Outputs, rel: &str, mode: u32, found: (u32, &Stamp)) -> Option<(usize, [u8; 32])> {
        if found.0 & 0o777 != mode {
            return None;
        }
        match previous.get(rel)? {
            (i, Some(digest)) if self.vouches_output(i, found.1) => Some((i, digest)),
            _ => None,
        }
    }

    /// Whether `f`, found by `walk`, still is the file the previous compile recorded (by
    /// the previous lock's `outputs`), by the record, without reading it: where the lock
    /// lists it, and its hash, if so.
    pub(crate) fn looks_recorded(
        &self,
        walk: &mut crate::disk::Walk,
        previous: &Outputs,
        f: &crate::artifact::Recorded,
    ) -> Option<(usize, [u8; 32])> {
        let st = walk.stat(&f.path)?;
        self.vouches_recorded(previous, &f.path, f.mode, (st.st_mode, &Stamp::of_stat(&st)))
    }

    /// Whether the record vouches that output `i` of the previous lock, now stamped
    /// `stamp`, is as the previous compile left it.
    fn vouches_output(&self, i: usize, stamp: &Stamp) -> bool {
        self.vouched.as_ref().is_some_and(|r| r.vouches_output(i, stamp))
    }

    /// Whether a record of this `--out` is kept (not with `--no-cache` or tokens inline).
    pub(crate) fn keeps(&self) -> bool {
        self.at.is_some()
    }

    /// After the write: records the outputs of `lock` (the new lock's bytes and their
    /// digest, if the tree has one clawc can read), taking the stamps of the files `seen`
    /// current (those the record vouched for, by their index in `previous`, the previous
    /// lock's outputs, as the record has them) and looking at the files written now.
    pub(crate) fn store(&self, out: &Path, seen: Seen, previous: &Outputs, lock: Option<&crate::lock::Pending>, jobs: usize) {
        let (Some(at), Some(lock)) = (&self.at, lock) else { return };
        let Some((inputs, paths)) = lock.recorded() else { return };
        let time = record::now();
        let seen = &seen.sorted();
        // The lock's list may be on disk (`lock::Listed`): it is read a part at a time,
        // once for its length and directories, once as it is stamped.
        let Some((outputs, parents)) = count_and_parents(paths.iter()) else { return };
        let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
        // Written as it is stamped, a part at a time, with the inputs' stamps as they were
        // read, and the directories' the write found unchanged.
        let dirs = self.directory_stamps(out, &parents);
        // The lock as it now is, with its copy, so the next compile and check need not read
        // it while it is stamped so (the stamp taken after the record's time: a lock
        // written within that clock tick is never vouched for).
        let copy = crate::lock::copy_of(lock);
        let lock_stamp =
            std::fs::symlink_metadata(out.join(crate::lock::LOCK)).ok().filter(std::fs::Metadata::is_file).map(|m| Stamp::of(&m));
        let copy = copy.as_ref().zip(lock_stamp).map(|((len, write), stamp)| (stamp, *len, write as crate::artifact::Maker<'_>));
        let sections = record::Sections { inputs: (inputs, lock.input_stamps()), outputs, dirs: &dirs, lock: copy };
        let mut next = paths.iter();
        let mut part = Vec::new();
        record::store_filled(at, lock.digest(), time, sections, |run, entries| {
            // A path that cannot be read back leaves its entry and the rest unstamped
            // (never vouched for).
            part.clear();
            part.extend(next.by_ref().take(run.len()).map_while(Result::ok));
            let stamped = part.len() * record::ENTRY;
            self.stamp(out, &part, |p| p, seen, previous, &mut entries[..stamped], jobs);
        });
    }

    /// Stamps the output `path_of` each of `paths` in its entry of `entries`: as `seen`
    /// holds it, as the record vouched for it (by its index in `previous`), or as it is on
    /// disk now.
    #[expect(clippy::too_many_arguments, reason = "one caller, two kinds of path list")]
    fn stamp<T: Sync>(
        &self,
        out: &Path,
        paths: &[T],
        path_of: impl Fn(&T) -> &str + Sync,
        seen: &Seen,
        previous: &Outputs,
        entries: &mut [u8],
        jobs: usize,
    ) {
        let threads = if paths.len() < crate::jobs::PARALLEL_MIN_FILES { 1 } else { jobs };
        // Each stamp written straight into the record (a list of them first was 6 MB at
        // 30,000 agent ids).
        crate::jobs::fill_runs(paths, entries, record::ENTRY, threads, 256, |run, entries| {
            let mut walk = crate::disk::Walk::new(out).ok();
            let record = self.vouched.as_ref().map(record::OnDisk::cursor);
            for (path, entry) in run.iter().map(&path_of).zip(entries.chunks_exact_mut(record::ENTRY)) {
                let vouched = || previous.get(path).filter(|&(i, _)| seen.was_vouched(i)).map(|(i, _)| i);
                let stamp = seen.get(path).or_else(|| vouched().and_then(|i| record.as_ref()?.output(i))).or_else(|| {
                    let walk = walk.as_mut()?;
                    crate::disk::is_safe_relative(path).then(|| walk.stat(path)).flatten().map(|st| Stamp::of_stat(&st))
                });
                record::put_entry(entry, stamp);
            }
        });
    }
}

/// Where the stat record of `out` is kept: `None` with `--no-cache` (no `records`), or
/// for tokens in the tree (nothing is vouched for, nothing recorded).
pub(crate) fn record_at(out: &Path, redacted: bool, records: Option<&Path>, untrusted: &[&Path]) -> Option<std::path::PathBuf> {
    records.filter(|_| redacted).and_then(|dir| crate::disk::cache_path(dir, out, untrusted))
}

/// Whether a lock's `secrets` names a redacted tree.
fn is_redacted(secrets: &str) -> bool {
    secrets == crate::lock::mode_name(crate::grant::SecretMode::Redact)
}

/// The files a write found holding their new bytes. Those the record vouched for are
/// noted by their index among the previous lock's outputs: their stamp is the one the
/// record holds (vouching is equality), so neither it nor the path is kept again (at
/// 30,000 agent ids that was 13 MB). Those found current by reading them, by path and
/// stamp: pushed as the batches come, sorted once when they are stored. (A list, not a
/// hash table: it grows with the agents, and a table of 30,000 stamps took 8 MB while it
/// grew.)
#[derive(Default)]
pub(crate) struct Seen {
    read: Vec<(Arc<str>, Stamp)>,
    vouched: Vec<bool>,
}

impl Seen {
    /// `path`, read and found current, stamped `stamp`.
    pub(crate) fn push(&mut self, path: Arc<str>, stamp: Stamp) {
        self.read.push((path, stamp));
    }

    /// Output `i` of the previous lock, found current as the record vouches.
    pub(crate) fn vouched(&mut self, i: usize) {
        if self.vouched.len() <= i {
            self.vouched.resize(i + 1, false);
        }
        self.vouched[i] = true;
    }

    fn was_vouched(&self, i: usize) -> bool {
        self.vouched.get(i).is_some_and(|v| *v)
    }

    /// Sorted by path, for [`Seen::get`].
    fn sorted(mut self) -> Self {
        self.read.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self
    }

    /// The stamp of `path`, if it was read and found current (once [`Seen::sorted`]).
    fn get(&self, path: &str) -> Option<Stamp> {
        self.read.binary_search_by(|(p, _)| (**p).cmp(path)).ok().map(|i| self.read[i].1)
    }
}

/// How many paths `paths` holds, and the parents of the directories that hold them
/// ([`crate::disk::parents_of_directories`]), read a part at a time; `None` when they
/// cannot be read back.
fn count_and_parents<'p>(
    mut all: impl Iterator<Item = std::io::Result<Cow<'p, str>>>,
) -> Option<(usize, std::collections::BTreeSet<String>)> {
    let (mut count, mut parents) = (0, std::collections::BTreeSet::new());
    loop {
        let part: Vec<_> = all.by_ref().take(PART).collect::<std::io::Result<_>>().ok()?;
        if part.is_empty() {
            return Some((count, parents));
        }
        count += part.len();
        parents.extend(crate::disk::parents_of_directories(part.iter().map(|p| &**p)).into_iter().map(str::to_string));
    }
}

/// How many of a list's paths are read back at once.
const PART: usize = 8192;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::write::{Previous, WriteOptions, Writer, previous_lock};
    use std::fs;
    use std::os::unix::fs::MetadataExt;
    use std::time::Duration;

    /// The trading-desk example compiled into `out` with its record in `records`.
    fn compile(out: &Path, records: &Path) {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
        let opts = crate::Options { pod: example.join("claw-pod.yml"), jobs: 1, ..Default::default() };
        let mut writer = Writer::new(out, WriteOptions { records: Some(records), jobs: 1, ..Default::default() }, true);
        let (compiled, refused) = crate::compile_into(&opts, &mut writer);
        assert!(refused.is_none() && !compiled.diagnostics.has_errors(), "{:?}", compiled.diagnostics);
        writer.finish(&compiled.secrets).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }

    /// What the write that opens `out` now learns of it.
    fn known(out: &Path, records: &Path) -> Known {
        let Ok(Previous::Lock(old)) = previous_lock(out, usize::MAX, None) else { panic!("a lock") };
        Known::load(out, Some(&old), true, Some(records), &[])
    }

    /// A write records the stamps of the directories holding its outputs' directories that
    /// it left as it found them, and the next write's walks take the directories in those
    /// as real without an `lstat`; a directory swapped for a symlink still shows, because
    /// the swap changed its parent's stamp.
    #[test]
    fn a_write_records_the_directories_it_left_and_the_next_trusts_them_only_while_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let (out, records) = (dir.path().join("out"), dir.path().join("records"));
        compile(&out, &records);
        let fresh = known(&out, &records);
        assert!(fresh.trusted.is_empty(), "a fresh compile had no directory to find unchanged: {:?}", fresh.trusted);
        // An output edited behind clawc's back: the next compile writes it again, in a
        // directory that already holds it, and records the tree.
        let tools = out.join("context/analyst-0/tools.json");
        fs::write(&tools, b"edited").unwrap();
        compile(&out, &records);
        assert_ne!(fs::read(&tools).unwrap(), b"edited");
        let again = known(&out, &records);
        let record = again.vouched.as_ref().expect("a record");
        let parents: Vec<&str> = again.before.iter().map(|(d, _)| d.as_str()).collect();
        assert!(parents.contains(&"") && parents.contains(&"context") && parents.contains(&"runners"), "{parents:?}");
        assert_eq!(record.dirs(), parents.len());
        assert!(again.trusted.iter().any(|d| d == "context"), "context was left as it was: {:?}", again.trusted);
        assert!(!again.trusted.iter().any(String::is_empty), "the lock was renamed into the root: never recorded as unchanged");
        let walked = again.walk(&out).unwrap().stat("context/analyst-0/tools.json");
        assert!(walked.is_some_and(|st| st.st_ino == fs::metadata(&tools).unwrap().ino()));
        // An agent's directory swapped for a symlink to a copy of itself.
        let agent = out.join("context/analyst-0");
        let copy = dir.path().join("analyst-0-copy");
        assert!(std::process::Command::new("cp").arg("-a").arg(&agent).arg(&copy).status().unwrap().success());
        fs::remove_dir_all(&agent).unwrap();
        std::os::unix::fs::symlink(&copy, &agent).unwrap();
        let swapped = known(&out, &records);
        assert!(!swapped.trusted.iter().any(|d| d == "context"), "{:?}", swapped.trusted);
        assert!(swapped.walk(&out).unwrap().stat("context/analyst-0/tools.json").is_none(), "not looked at through the symlink");
    }

    fn table_of(lock: &str) -> serde_json::Result<(Outputs, usize)> {
        let mut de = serde_json::Deserializer::from_str(lock);
        read_previous(&mut de, usize::MAX, capacity_for(lock.as_bytes()), &|| unreachable!("held")).unwrap().map(|r| (r.outputs, r.listed))
    }

    #[test]
    fn a_locks_outputs_go_into_the_table_at_their_index_and_unsafe_paths_are_left_out() {
        let hash = "ab".repeat(32);
        let lock = format!(
            r#"{{"secrets":"redact","inputs":[],"outputs":[
                {{"path":"a/tools.json","sha256":"{hash}","extra":1}},
                {{"path":"../escape","sha256":"{hash}"}},
                {{"path":"b/CLAWDAPUS.md","sha256":"not hex"}}]}}"#
        );
        let (table, listed) = table_of(&lock).unwrap();
        assert_eq!(listed, 3);
        assert_eq!(table.get("a/tools.json"), Some((0, Some([0xab; 32]))));
        assert_eq!(table.get("../escape"), None);
        assert_eq!(table.get("b/CLAWDAPUS.md"), Some((2, None)));
        assert_eq!(table.iter().count(), 2);
    }

    #[test]
    fn outputs_that_are_not_a_list_of_paths_and_hashes_make_the_lock_unreadable() {
        for outputs in [r#"{}"#, r#"[{"path":"a"}]"#, r#"[1]"#, r#""x""#, r#"[{"path":7,"sha256":""}]"#] {
            let lock = format!(r#"{{"secrets":"redact","outputs":{outputs}}}"#);
            assert!(table_of(&lock).is_err(), "{outputs}");
        }
        assert!(table_of(r#"{"secrets":"redact","inputs":{"x":1},"outputs":[]}"#).is_ok(), "inputs of another shape are ignored");
    }

    #[test]
    fn the_room_made_for_outputs_is_bounded_by_the_texts_length_not_by_its_keys() {
        let genuine = format!(r#"[{{"path":"a/tools.json","sha256":"{}"}},{{"path":"b","sha256":"{}"}}]"#, "0".repeat(64), "1".repeat(64));
        assert_eq!(capacity_for(genuine.as_bytes()), 2);
        // Entries of empty strings, one per 24 bytes: room is made for one per 80.
        let keys = format!("[{}]", vec![r#"{"path":"","sha256":""}"#; 1000].join(","));
        assert_eq!(capacity_for(keys.as_bytes()), keys.len() / 80);
        assert!(capacity_for(keys.as_bytes()) < 1000);
        assert_eq!(table_of(&format!(r#"{{"secrets":"redact","outputs":{keys}}}"#)).unwrap().1, 1000, "all still read");
    }
}
