//! The outputs a lock lists, as a write looks them up: by path, each file's index in the
//! lock and its SHA-256.
//!
//! This table grows with the agents (90,000 outputs at 30,000 agent ids), so it is laid
//! out for size: the entries in one vector in lock order, with a hash table of their
//! positions, not a map that keeps each entry in a bucket of its own (two thirds of
//! whose buckets are spare after a doubling). Its paths come from the lock in `--out`
//! (written by whoever opened the pull request), so they are hashed with the standard
//! library's randomly keyed hasher.

use hashbrown::HashTable;
use std::hash::BuildHasher;
use std::sync::Arc;

/// A lock's outputs: path → (its index in the lock, SHA-256). The hash is 32 bytes, not
/// 64 hex digits; `None` when the lock's is not 64 lower-case hex digits, so that no file
/// is ever taken to be the one it names.
///
/// A hash table, not a B-tree: a recompile looks up every kept file in it three or four
/// times (taking services, vouching for files, storing the record), 37,000 lookups at
/// 3,000 agent ids, each a dozen comparisons of long, alike paths in a B-tree. Nothing
/// iterates it in an order of its own making: [`Outputs::iter`] is the lock's order.
///
/// A path is shared (not copied) by the render memo's files and, for the files taken
/// from the tree, by the new lock's list.
#[derive(Debug, Default)]
pub(crate) struct Outputs {
    entries: Vec<Entry>,
    by_path: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

#[derive(Debug)]
struct Entry {
    path: Arc<str>,
    /// Its index in the lock (fits: a lock is at most `disk::MAX_BOOKKEEPING` bytes).
    index: u32,
    digest: Option<[u8; 32]>,
}

impl Outputs {
    pub(crate) fn new() -> Self {
        Outputs::default()
    }

    /// Room for `n` outputs, made at once (grown by doubling, the table of 9,301 outputs
    /// was copied and faulted in again).
    pub(crate) fn with_capacity(n: usize) -> Self {
        Outputs { entries: Vec::with_capacity(n), by_path: HashTable::with_capacity(n), hasher: Default::default() }
    }

    /// Adds output `index` of the lock. A path listed twice keeps its first string and
    /// takes the later index and hash, as a map's insert would.
    pub(crate) fn insert(&mut self, path: Arc<str>, index: usize, digest: Option<[u8; 32]>) {
        let Ok(index) = u32::try_from(index) else { return };
        let hash = self.hasher.hash_one(&*path);
        let entries = &mut self.entries;
        match self.by_path.find(hash, |&at| *entries[at as usize].path == *path) {
            Some(&at) => {
                let e = &mut entries[at as usize];
                (e.index, e.digest) = (index, digest);
            }
            None => {
                let Ok(at) = u32::try_from(entries.len()) else { return };
                entries.push(Entry { path, index, digest });
                let hasher = &self.hasher;
                self.by_path.insert_unique(hash, at, |&at| hasher.hash_one(&*entries[at as usize].path));
            }
        }
    }

    fn entry(&self, path: &str) -> Option<&Entry> {
        let at = self.by_path.find(self.hasher.hash_one(path), |&at| *self.entries[at as usize].path == *path)?;
        Some(&self.entries[*at as usize])
    }

    /// Output `path`'s index in the lock and its SHA-256.
    pub(crate) fn get(&self, path: &str) -> Option<(usize, Option<&[u8; 32]>)> {
        self.entry(path).map(|e| (e.index as usize, e.digest.as_ref()))
    }

    /// The table's own string for `path`, to share rather than copy.
    pub(crate) fn shared(&self, path: &str) -> Option<&Arc<str>> {
        self.entry(path).map(|e| &e.path)
    }

    /// Every output: path, index in the lock, SHA-256.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, usize, Option<&[u8; 32]>)> {
        self.entries.iter().map(|e| (&*e.path, e.index as usize, e.digest.as_ref()))
    }
}

impl FromIterator<(Arc<str>, (usize, Option<[u8; 32]>))> for Outputs {
    fn from_iter<I: IntoIterator<Item = (Arc<str>, (usize, Option<[u8; 32]>))>>(items: I) -> Self {
        let mut table = Outputs::new();
        for (path, (index, digest)) in items {
            table.insert(path, index, digest);
        }
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_finds_each_output_by_path_and_a_repeated_path_takes_the_later_entry() {
        let mut table = Outputs::with_capacity(2);
        let first: Arc<str> = Arc::from("context/a/tools.json");
        table.insert(first.clone(), 0, Some([1; 32]));
        table.insert(Arc::from("report.json"), 1, None);
        for i in 2..1000 {
            table.insert(Arc::from(format!("context/a-{i}/CLAWDAPUS.md")), i, Some([i as u8; 32]));
        }
        table.insert(Arc::from("context/a/tools.json"), 1000, Some([9; 32]));
        assert_eq!(table.iter().count(), 1000);
        assert_eq!(table.get("context/a/tools.json"), Some((1000, Some(&[9; 32]))));
        assert!(Arc::ptr_eq(table.shared("context/a/tools.json").unwrap(), &first), "the first string is kept");
        assert_eq!(table.get("report.json"), Some((1, None)));
        assert_eq!(table.get("context/a-999/CLAWDAPUS.md"), Some((999, Some(&[231; 32]))));
        assert_eq!(table.get("context/a-1000/CLAWDAPUS.md"), None);
        assert_eq!(table.get(""), None);
        let listed: Vec<usize> = table.iter().map(|(_, i, _)| i).collect();
        assert_eq!(listed[..3], [1000, 1, 2], "in the order first listed");
    }
}
