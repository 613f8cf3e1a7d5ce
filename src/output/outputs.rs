//! The outputs a lock lists, as a write looks them up: by path, each file's index in the
//! lock and its SHA-256.
//!
//! This table grows with the agents (90,000 outputs at 30,000 agent ids, 10 MB held), so
//! past a budget it goes to disk: the entries sorted by path into an unnamed file in
//! `--out` (through [`crate::lock::Listing`]'s sorted runs, merged into one), with every
//! [`BLOCK`]th path held as a sparse index, and a lookup reads the block its path falls
//! in. The lookups come clustered (a service's files one after another), so a few blocks
//! kept read answer most of them. Below the budget it is held: the entries in one vector
//! in lock order, with a hash table of their positions. Its paths come from the lock in
//! `--out` (written by whoever opened the pull request), so they are hashed with a
//! randomly keyed hasher.

use crate::lock::Listing;
use crate::runs::Runs;
use hashbrown::HashTable;
use std::borrow::Cow;
use std::hash::BuildHasher;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A lock's outputs: path → (its index in the lock, SHA-256). The hash is 32 bytes, not
/// 64 hex digits; `None` when the lock's is not 64 lower-case hex digits, so that no file
/// is ever taken to be the one it names.
///
/// A recompile looks up every kept file in it three or four times (taking services,
/// vouching for files, storing the record), 37,000 lookups at 3,000 agent ids.
#[derive(Debug)]
pub(crate) struct Outputs {
    table: Table,
    /// A block of the table on disk could not be read: what was looked up in it was not
    /// found, so the write must not go on ([`Outputs::failed`]).
    failed: AtomicBool,
}

#[derive(Debug)]
enum Table {
    Held(Held),
    Paged(Paged),
}

/// The table held: a hash table, not a B-tree (each lookup in a B-tree was a dozen
/// comparisons of long, alike paths). Nothing iterates it in an order of its own making:
/// [`Outputs::iter`] is the lock's order.
#[derive(Debug, Default)]
struct Held {
    entries: Vec<Entry>,
    by_path: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

#[derive(Debug)]
struct Entry {
    path: Box<str>,
    /// Its index in the lock (fits: a lock is at most `disk::MAX_BOOKKEEPING` bytes).
    index: u32,
    digest: Option<[u8; 32]>,
}

/// What a held entry takes besides its path's bytes: the entry, its slot in the hash
/// table, its path's allocation.
const HELD_ENTRY: usize = std::mem::size_of::<Entry>() + 8 + 2 * std::mem::size_of::<usize>();

/// An entry on disk: its index in the lock (little-endian), 1 if it has a hash, the hash.
const PAYLOAD: usize = 4 + 1 + 32;

/// How many entries a block of the table on disk holds (about 3 KiB of them), and so how
/// many paths of it the sparse index leaves on disk for each it holds.
const BLOCK: usize = 32;

/// The table on disk: one sorted run, its sparse index, the blocks read last.
struct Paged {
    run: Runs<PAYLOAD>,
    index: Vec<(Box<str>, u64)>,
    kept: crate::runs::Recent<Block>,
}

impl std::fmt::Debug for Paged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Paged").field("blocks", &self.index.len()).finish()
    }
}

/// A block read: its bytes, and where each of its entries starts.
struct Block {
    bytes: Vec<u8>,
    starts: Vec<u32>,
}

impl Default for Outputs {
    fn default() -> Self {
        Outputs::held(Held::default())
    }
}

impl Outputs {
    pub(crate) fn new() -> Self {
        Outputs::default()
    }

    fn held(held: Held) -> Self {
        Outputs { table: Table::Held(held), failed: AtomicBool::new(false) }
    }

    /// Output `path`'s index in the lock and its SHA-256.
    pub(crate) fn get(&self, path: &str) -> Option<(usize, Option<[u8; 32]>)> {
        match &self.table {
            Table::Held(h) => h.entry(path).map(|e| (e.index as usize, e.digest)),
            Table::Paged(p) => match p.get(path) {
                Ok(found) => found,
                Err(_) => {
                    self.failed.store(true, Ordering::Relaxed);
                    None
                }
            },
        }
    }

    /// Every output: path, index in the lock, SHA-256; in the lock's order when held, in
    /// path order from disk, where a block that cannot be read back is an error (then
    /// nothing more).
    pub(crate) fn iter(&self) -> impl Iterator<Item = io::Result<(Cow<'_, str>, usize, Option<[u8; 32]>)>> {
        let (held, paged) = match &self.table {
            Table::Held(h) => (Some(h.entries.iter().map(|e| Ok((Cow::Borrowed(&*e.path), e.index as usize, e.digest)))), None),
            Table::Paged(p) => (
                None,
                Some(p.run.merged(&[]).map(|e| {
                    e.map(|(path, payload)| {
                        let (index, digest) = unpack(&payload);
                        (path, index, digest)
                    })
                })),
            ),
        };
        held.into_iter().flatten().chain(paged.into_iter().flatten())
    }

    /// Whether a lookup found the table on disk unreadable (then what it looked up was
    /// taken as not listed).
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Whether the table is on disk.
    #[cfg(test)]
    fn is_paged(&self) -> bool {
        matches!(self.table, Table::Paged(_))
    }
}

impl Held {
    /// Adds output `index` of the lock. A path listed twice keeps its first string and
    /// takes the later index and hash, as a map's insert would. Whether it was new.
    fn insert(&mut self, path: &str, index: u32, digest: Option<[u8; 32]>) -> bool {
        let hash = self.hasher.hash_one(path);
        let entries = &mut self.entries;
        match self.by_path.find(hash, |&at| *entries[at as usize].path == *path) {
            Some(&at) => {
                let e = &mut entries[at as usize];
                (e.index, e.digest) = (index, digest);
                false
            }
            None => {
                let Ok(at) = u32::try_from(entries.len()) else { return false };
                entries.push(Entry { path: Box::from(path), index, digest });
                let hasher = &self.hasher;
                self.by_path.insert_unique(hash, at, |&at| hasher.hash_one(&*entries[at as usize].path));
                true
            }
        }
    }

    fn entry(&self, path: &str) -> Option<&Entry> {
        let at = self.by_path.find(self.hasher.hash_one(path), |&at| *self.entries[at as usize].path == *path)?;
        Some(&self.entries[*at as usize])
    }
}

impl Paged {
    /// Output `path`'s index and hash: from the block its path falls in, read unless kept
    /// (the lookups come clustered: the block of one a moment ago holds most).
    fn get(&self, path: &str) -> io::Result<Option<(usize, Option<[u8; 32]>)>> {
        let block = self.kept.get(
            |b| self.holds(b, path),
            || self.index.partition_point(|(first, _)| **first <= *path).checked_sub(1),
            |b| {
                let end = self.index.get(b + 1).map_or(self.run.end(), |(_, at)| *at);
                let bytes = self.run.read(self.index[b].1, end)?;
                Block::of(bytes).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a block of the table is torn"))
            },
        )?;
        Ok(block.and_then(|b| b.find(path)).map(|payload| unpack(&payload)))
    }

    /// Whether `path` falls in block `b`: at or after its first path, before the next's.
    fn holds(&self, b: usize, path: &str) -> bool {
        *self.index[b].0 <= *path && self.index.get(b + 1).is_none_or(|(next, _)| *path < **next)
    }
}

impl Block {
    /// `bytes` as whole entries, or `None`.
    fn of(bytes: Vec<u8>) -> Option<Block> {
        let mut starts = Vec::with_capacity(BLOCK);
        let mut at = 0;
        for entry in crate::runs::entries::<PAYLOAD>(&bytes) {
            let (path, _) = entry?;
            starts.push(u32::try_from(at).ok()?);
            at += 4 + path.len() + PAYLOAD;
        }
        Some(Block { bytes, starts })
    }

    /// The path (as bytes: it was checked to be UTF-8 when the block was read, and byte
    /// order is `str`'s) and payload of the entry starting at `at`.
    fn entry_at(&self, at: u32) -> (&[u8], [u8; PAYLOAD]) {
        let at = at as usize;
        let len = u32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        let (path, rest) = self.bytes[at + 4..].split_at(len);
        (path, rest[..PAYLOAD].try_into().expect("checked when read"))
    }

    /// The payload of `path`, if the block lists it.
    fn find(&self, path: &str) -> Option<[u8; PAYLOAD]> {
        let i = self.starts.binary_search_by(|&at| self.entry_at(at).0.cmp(path.as_bytes())).ok()?;
        Some(self.entry_at(self.starts[i]).1)
    }
}

/// An entry's index and hash as a run holds them.
fn pack(index: u32, digest: Option<[u8; 32]>) -> [u8; PAYLOAD] {
    let mut p = [0; PAYLOAD];
    p[..4].copy_from_slice(&index.to_le_bytes());
    if let Some(d) = digest {
        p[4] = 1;
        p[5..].copy_from_slice(&d);
    }
    p
}

fn unpack(p: &[u8; PAYLOAD]) -> (usize, Option<[u8; 32]>) {
    let index = u32::from_le_bytes([p[0], p[1], p[2], p[3]]) as usize;
    let digest = (p[4] == 1).then(|| p[5..].try_into().expect("32 bytes"));
    (index, digest)
}

/// An [`Outputs`] as it is filled, in the lock's order: held until its entries take
/// `budget` bytes, then listed as sorted runs in a file `file` makes, and at the end
/// merged into the table on disk.
pub(crate) struct Filling<'f> {
    held: Held,
    bytes: usize,
    budget: usize,
    listing: Option<Listing<PAYLOAD>>,
    file: &'f dyn Fn() -> io::Result<std::fs::File>,
}

impl<'f> Filling<'f> {
    /// A table held up to `budget` bytes (`usize::MAX`: all of it), with room made at once
    /// for `capacity` entries as far as the budget goes.
    pub(crate) fn new(budget: usize, capacity: usize, file: &'f dyn Fn() -> io::Result<std::fs::File>) -> Self {
        let capacity = capacity.min(budget / HELD_ENTRY);
        let held = Held { entries: Vec::with_capacity(capacity), by_path: HashTable::with_capacity(capacity), hasher: Default::default() };
        Filling { held, bytes: 0, budget, listing: None, file }
    }

    /// Adds output `index` of the lock (of a path listed twice, the later index and hash).
    pub(crate) fn insert(&mut self, path: &str, index: usize, digest: Option<[u8; 32]>) -> io::Result<()> {
        let Ok(index) = u32::try_from(index) else { return Ok(()) };
        if let Some(listing) = &mut self.listing {
            return listing.put(Arc::from(path), pack(index, digest), self.file, |e| e);
        }
        if self.held.insert(path, index, digest) {
            self.bytes += HELD_ENTRY + path.len();
        }
        if self.bytes > self.budget {
            // Sorted where they are and written out as the first run: copied into a listing,
            // they were held twice at the peak of a big recompile (5 MB more).
            let Held { mut entries, .. } = std::mem::take(&mut self.held);
            entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
            let sorted = entries.iter().map(|e| (&*e.path, pack(e.index, e.digest)));
            let listing = Listing::with_run(self.budget, (self.file)()?, sorted)?;
            self.listing = Some(listing);
        }
        Ok(())
    }

    /// The table: held, or merged onto disk.
    pub(crate) fn finish(self) -> io::Result<Outputs> {
        let Some(listing) = self.listing else { return Ok(Outputs::held(self.held)) };
        let listed = listing.finish();
        let mut run = Runs::new((self.file)()?);
        let index = run.push_indexed(listed.iter(), BLOCK)?;
        Ok(Outputs { table: Table::Paged(Paged { run, index, kept: Default::default() }), failed: AtomicBool::new(false) })
    }
}

impl FromIterator<(Arc<str>, (usize, Option<[u8; 32]>))> for Outputs {
    fn from_iter<I: IntoIterator<Item = (Arc<str>, (usize, Option<[u8; 32]>))>>(items: I) -> Self {
        let mut held = Held::default();
        for (path, (index, digest)) in items {
            if let Ok(index) = u32::try_from(index) {
                held.insert(&path, index, digest);
            }
        }
        Outputs::held(held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    type Item = (String, usize, Option<[u8; 32]>);

    fn filled(budget: usize, items: &[Item]) -> Outputs {
        let file = || tempfile::tempfile();
        let mut filling = Filling::new(budget, items.len(), &file);
        for (path, index, digest) in items {
            filling.insert(path, *index, *digest).unwrap();
        }
        filling.finish().unwrap()
    }

    /// 1,000 outputs listed out of path order, one of them twice.
    fn items() -> Vec<Item> {
        let mut items = vec![("context/a/tools.json".to_string(), 0, Some([1; 32])), ("report.json".to_string(), 1, None)];
        items.extend((2..1000).map(|i| (format!("context/a-{:03}/CLAWDAPUS.md", 999 - i), i, Some([i as u8; 32]))));
        items.push(("context/a/tools.json".to_string(), 1000, Some([9; 32])));
        items
    }

    #[test]
    fn it_finds_each_output_by_path_held_or_on_disk_and_a_repeated_path_takes_the_later_entry() {
        let items = items();
        let want: BTreeMap<&str, (usize, Option<[u8; 32]>)> = items.iter().map(|(p, i, d)| (p.as_str(), (*i, *d))).collect();
        for budget in [usize::MAX, 1, 3 * HELD_ENTRY + 60, 20_000] {
            let table = filled(budget, &items);
            assert_eq!(table.is_paged(), budget != usize::MAX, "{budget}");
            for (path, found) in &want {
                assert_eq!(table.get(path), Some(*found), "{budget} {path}");
            }
            assert_eq!(table.get("context/a/tools.json"), Some((1000, Some([9; 32]))));
            assert_eq!(table.get("report.json"), Some((1, None)));
            for absent in ["", "a", "context/a-999/CLAWDAPUS.md", "context/a-0000/CLAWDAPUS.md", "zzz"] {
                assert_eq!(table.get(absent), None, "{budget} {absent}");
            }
            let mut listed: Vec<(String, usize, Option<[u8; 32]>)> =
                table.iter().map(|e| e.map(|(p, i, d)| (p.into_owned(), i, d))).collect::<io::Result<_>>().unwrap();
            if budget == usize::MAX {
                assert_eq!(listed[..3].iter().map(|e| e.1).collect::<Vec<_>>(), [1000, 1, 2], "held: in the order first listed");
            } else {
                assert!(listed.is_sorted(), "on disk: in path order");
            }
            listed.sort();
            assert_eq!(listed, want.iter().map(|(p, (i, d))| (p.to_string(), *i, *d)).collect::<Vec<_>>());
            assert!(!table.failed());
        }
    }

    #[test]
    fn a_block_on_disk_that_does_not_read_back_whole_finds_nothing_and_says_the_table_failed() {
        let mut table = filled(1, &items());
        let Table::Paged(paged) = &mut table.table else { panic!("on disk") };
        // The first block made to end inside the second's first entry.
        paged.index[1].1 += 1;
        let first = paged.index[0].0.to_string();
        assert_eq!(table.get(&first), None);
        assert!(table.failed(), "a torn block is a failure, not an absent path");
    }
}
