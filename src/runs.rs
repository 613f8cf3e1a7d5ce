//! Sorted runs: a list of paths, each with a payload of `N` bytes (a SHA-256 for the
//! lock's list), too long to hold whole, kept as
//! sorted parts in one unnamed file and read back merged in path order. The lock's list
//! of outputs ([`crate::lock::Listed`]) goes here past a budget, so a compile's memory
//! does not grow with its outputs (`sort` does the same with its `-S` buffer and
//! temporary files).
//!
//! The file is the writer's own: unnamed (`O_TMPFILE`, or unlinked at once where the file
//! system lacks it), inside `--out`, and gone when closed, so nothing of it is left to
//! clean up or to be read by another process by name. Each run is written once, in path
//! order, each path once; a path put again in a later run is read back from the later
//! one ([`Merged`]).

use std::borrow::Cow;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// A run's entry: the path's length (4 bytes, little-endian), the path, its payload.
const LEN: usize = 4;
/// The longest path a run reads back (output paths, made of validated names, are far
/// shorter): a garbled length is an error, not an allocation of gigabytes.
const MAX_PATH: usize = 64 * 1024;
/// How much of a run is read at once while merging.
const READ: usize = 64 * 1024;

/// Runs in a file of their own, oldest first.
#[derive(Debug)]
pub(crate) struct Runs<const N: usize = 32> {
    file: File,
    /// Each run's bytes in `file` (start, end).
    runs: Vec<(u64, u64)>,
    end: u64,
}

impl<const N: usize> Runs<N> {
    pub(crate) fn new(file: File) -> Runs<N> {
        Runs { file, runs: Vec::new(), end: 0 }
    }

    /// Appends `items`, which must be in path order with each path once, as a run.
    pub(crate) fn push<'a>(&mut self, items: impl IntoIterator<Item = (&'a str, &'a [u8; N])>) -> io::Result<()> {
        self.push_indexed(items.into_iter().map(|(p, d)| Ok((p, *d))), usize::MAX).map(drop)
    }

    /// Appends `items` (in path order, each path once) as a run, or stops at the first
    /// error among them. Returns the path and position of every `every`th entry, the first
    /// included: a sparse index of the run, to read a block of it at a time
    /// ([`Runs::read`], [`entries`]).
    pub(crate) fn push_indexed<P: AsRef<str>>(
        &mut self,
        items: impl IntoIterator<Item = io::Result<(P, [u8; N])>>,
        every: usize,
    ) -> io::Result<Vec<(Box<str>, u64)>> {
        let start = self.end;
        let mut index = Vec::new();
        let mut buf = Vec::with_capacity(READ);
        for (n, item) in items.into_iter().enumerate() {
            let (path, payload) = item?;
            let path = path.as_ref();
            if n % every == 0 {
                index.push((Box::from(path), self.end + buf.len() as u64));
            }
            let len = u32::try_from(path.len()).map_err(|_| io::Error::other("a path longer than 4 GiB"))?;
            buf.extend_from_slice(&len.to_le_bytes());
            buf.extend_from_slice(path.as_bytes());
            buf.extend_from_slice(&payload);
            if buf.len() >= READ {
                self.append(&buf)?;
                buf.clear();
            }
        }
        self.append(&buf)?;
        if self.end > start {
            self.runs.push((start, self.end));
        }
        Ok(index)
    }

    /// The bytes of the file from `at` to `end` (a block of a run, by its sparse index).
    pub(crate) fn read(&self, at: u64, end: u64) -> io::Result<Vec<u8>> {
        let len = usize::try_from(end.saturating_sub(at)).map_err(|_| io::Error::other("a block too big to read"))?;
        let mut b = vec![0; len];
        self.file.read_exact_at(&mut b, at)?;
        Ok(b)
    }

    /// Where the runs end.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    fn append(&mut self, b: &[u8]) -> io::Result<()> {
        self.file.write_all_at(b, self.end)?;
        self.end += b.len() as u64;
        Ok(())
    }

    /// How many runs there are.
    pub(crate) fn len(&self) -> usize {
        self.runs.len()
    }

    /// The runs and then `newest` (in path order, each path once), merged into one list in
    /// path order; of a path in more than one, the newest's entry.
    pub(crate) fn merged<'a>(&'a self, newest: &'a [(std::sync::Arc<str>, [u8; N])]) -> Merged<'a, N> {
        let mut sources: Vec<Source<'a, N>> = self
            .runs
            .iter()
            .map(|&(at, end)| Source::Run(io::BufReader::with_capacity(READ, Part { file: &self.file, at, end })))
            .collect();
        sources.push(Source::Held(newest.iter()));
        let mut merged = Merged { heads: std::collections::BinaryHeap::with_capacity(sources.len()), sources, failed: false };
        for i in 0..merged.sources.len() {
            merged.advance(i);
        }
        merged
    }
}

/// One sorted list being merged: a run read back, or the list still held.
enum Source<'a, const N: usize> {
    Run(Cursor<'a>),
    Held(std::slice::Iter<'a, (std::sync::Arc<str>, [u8; N])>),
}

/// A run read back a buffer at a time.
type Cursor<'a> = io::BufReader<Part<'a>>;

/// The bytes of `file` from `at` to `end`, read where they are (positioned reads: several
/// parts of one file are read at once, and the file is never moved).
pub(crate) struct Part<'f> {
    pub(crate) file: &'f File,
    pub(crate) at: u64,
    pub(crate) end: u64,
}

impl io::Read for Part<'_> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        let want = b.len().min(usize::try_from(self.end - self.at).unwrap_or(usize::MAX));
        let n = self.file.read_at(&mut b[..want], self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// The next entry of a run, or `None` at its end.
fn next_entry<const N: usize>(c: &mut Cursor<'_>) -> io::Result<Option<(String, [u8; N])>> {
    use io::{BufRead, Read};
    if c.fill_buf()?.is_empty() {
        return Ok(None);
    }
    let mut len = [0; LEN];
    c.read_exact(&mut len).map_err(torn)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_PATH {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "a run's path is longer than any output's"));
    }
    let mut path = vec![0; len];
    c.read_exact(&mut path).map_err(torn)?;
    let path = String::from_utf8(path).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a run's path is not UTF-8"))?;
    let mut digest = [0; N];
    c.read_exact(&mut digest).map_err(torn)?;
    Ok(Some((path, digest)))
}

/// A run that ends inside an entry says so.
fn torn(e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => io::Error::new(io::ErrorKind::UnexpectedEof, "a run ends inside an entry"),
        _ => e,
    }
}

/// The few blocks of a file read last, the latest first, each by its number: lookups
/// that come clustered find their block here without reading it again.
#[derive(Debug)]
pub(crate) struct Recent<T> {
    kept: std::sync::Mutex<Vec<(usize, std::sync::Arc<T>)>>,
}

/// How many blocks a [`Recent`] keeps.
const RECENT: usize = 8;

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Recent { kept: std::sync::Mutex::new(Vec::with_capacity(RECENT)) }
    }
}

impl<T> Recent<T> {
    /// The kept block whose number `holds` picks, made the latest; else block `which()`
    /// (`None`: no block) made by `read` and kept in place of the one used longest ago.
    pub(crate) fn get(
        &self,
        holds: impl Fn(usize) -> bool,
        which: impl FnOnce() -> Option<usize>,
        read: impl FnOnce(usize) -> io::Result<T>,
    ) -> io::Result<Option<std::sync::Arc<T>>> {
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = kept.iter().position(|(b, _)| holds(*b)) {
            let found = kept.remove(at);
            kept.insert(0, found);
            return Ok(Some(kept[0].1.clone()));
        }
        let Some(b) = which() else { return Ok(None) };
        let block = std::sync::Arc::new(read(b)?);
        kept.truncate(RECENT - 1);
        kept.insert(0, (b, block.clone()));
        Ok(Some(block))
    }
}

/// The entries of a block of a run ([`Runs::read`]) in order: each one's path and
/// payload, or `None` (then nothing more) where the bytes are not whole entries.
pub(crate) fn entries<const N: usize>(mut b: &[u8]) -> impl Iterator<Item = Option<(&str, [u8; N])>> {
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        let entry = (|| {
            let (len, rest) = b.split_first_chunk::<LEN>()?;
            let len = u32::from_le_bytes(*len) as usize;
            let (path, rest) = rest.split_at_checked(len)?;
            let (payload, rest) = rest.split_first_chunk::<N>()?;
            Some((std::str::from_utf8(path).ok()?, *payload, rest))
        })();
        b = entry.map_or(&[], |(_, _, rest)| rest);
        Some(entry.map(|(p, d, _)| (p, d)))
    })
}

/// [`Runs::merged`]: each entry in path order, or the first error reading a run back (then
/// nothing more). The sources' next entries wait in a heap, smallest path first and, of
/// equal paths, the newest source's.
pub(crate) struct Merged<'a, const N: usize = 32> {
    sources: Vec<Source<'a, N>>,
    heads: std::collections::BinaryHeap<Head<'a, N>>,
    failed: bool,
}

/// A source's next entry, ordered for [`Merged`]'s heap (a max-heap).
struct Head<'a, const N: usize> {
    path: Cow<'a, str>,
    digest: [u8; N],
    source: usize,
}

impl<const N: usize> Ord for Head<'_, N> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.path.cmp(&self.path).then(self.source.cmp(&other.source))
    }
}

impl<const N: usize> PartialOrd for Head<'_, N> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<const N: usize> PartialEq for Head<'_, N> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl<const N: usize> Eq for Head<'_, N> {}

impl<'a, const N: usize> Merged<'a, N> {
    /// Puts source `i`'s next entry into the heap.
    fn advance(&mut self, i: usize) {
        let next = match &mut self.sources[i] {
            Source::Held(it) => it.next().map(|(p, d)| (Cow::Borrowed(&**p), *d)),
            Source::Run(c) => match next_entry(c) {
                Ok(e) => e.map(|(p, d)| (Cow::Owned(p), d)),
                Err(_) => {
                    self.failed = true;
                    None
                }
            },
        };
        if let Some((path, digest)) = next {
            self.heads.push(Head { path, digest, source: i });
        }
    }
}

impl<'a, const N: usize> Iterator for Merged<'a, N> {
    type Item = io::Result<(Cow<'a, str>, [u8; N])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let head = self.heads.pop()?;
        self.advance(head.source);
        // Older sources' entries for the same path are passed over.
        while self.heads.peek().is_some_and(|h| h.path == head.path) {
            let older = self.heads.pop().expect("peeked");
            self.advance(older.source);
        }
        if self.failed {
            return Some(Err(io::Error::other("a sorted run could not be read back")));
        }
        Some(Ok((head.path, head.digest)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn list(items: &[(&str, u8)]) -> Vec<(Arc<str>, [u8; 32])> {
        items.iter().map(|(p, d)| (Arc::from(*p), [*d; 32])).collect()
    }

    fn merged(runs: &Runs, held: &[(Arc<str>, [u8; 32])]) -> Vec<(String, u8)> {
        runs.merged(held).map(|e| e.map(|(p, d)| (p.into_owned(), d[0]))).collect::<io::Result<_>>().unwrap()
    }

    #[test]
    fn runs_and_the_held_list_merge_in_path_order_the_newest_entry_of_a_path_kept() {
        let mut runs = Runs::new(tempfile::tempfile().unwrap());
        let first = list(&[("a/1", 1), ("b/long/path/ü", 1), ("c", 1)]);
        let second = list(&[("a/0", 2), ("b/long/path/ü", 2), ("d", 2)]);
        for run in [&first, &second] {
            runs.push(run.iter().map(|(p, d)| (&**p, d))).unwrap();
        }
        runs.push(std::iter::empty()).unwrap();
        assert_eq!(runs.len(), 2, "an empty run is not kept");
        let held = list(&[("c", 3), ("e", 3)]);
        let want = [("a/0", 2), ("a/1", 1), ("b/long/path/ü", 2), ("c", 3), ("d", 2), ("e", 3)];
        assert_eq!(merged(&runs, &held), want.map(|(p, d)| (p.to_string(), d)));
        assert_eq!(merged(&runs, &held), merged(&runs, &held), "read back as often as asked");
        assert_eq!(merged(&Runs::new(tempfile::tempfile().unwrap()), &held), [("c".to_string(), 3), ("e".to_string(), 3)]);
    }

    #[test]
    fn a_run_read_back_across_many_buffers_is_whole_and_a_torn_one_is_an_error() {
        let mut runs = Runs::new(tempfile::tempfile().unwrap());
        let paths: Vec<String> = (0..20_000).map(|i| format!("agents/agent-{i:06}/{}", "x".repeat(i % 7))).collect();
        runs.push(paths.iter().map(|p| (p.as_str(), &[7; 32]))).unwrap();
        let back = merged(&runs, &[]);
        assert_eq!(back.len(), paths.len());
        assert!(back.iter().zip(&paths).all(|((p, d), q)| p == q && *d == 7));
        // Cut inside the last entry: the merge ends with an error, never a short list.
        runs.file.set_len(runs.end - 3).unwrap();
        let read: Vec<io::Result<_>> = runs.merged(&[]).collect();
        assert!(read.last().is_some_and(Result::is_err), "a torn run is an error");
        assert_eq!(read.iter().filter(|e| e.is_err()).count(), 1, "and nothing after it");
    }
}
