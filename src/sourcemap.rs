//! Input texts and positions inside them.
//!
//! Every diagnostic and every provenance record points into a [`SourceFile`] through a
//! [`FileId`] and a byte [`Span`]. Files are named relative to the pod directory so that
//! nothing host-specific reaches an artifact.

use std::sync::Arc;

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileId(pub u32);

/// A byte range with the 1-based line and column of its start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub line: u32,
    pub col: u32,
}

/// Hashed by where it is as a reader finds it (line, column, length), not by its byte
/// offsets: the render key (`project::reuse`) hashes resolved plans, and an edit that
/// shifts a later service's bytes without moving its lines must not change its key.
/// (Spans equal as values hash alike, as `Hash` requires.)
impl std::hash::Hash for Span {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.line, self.col, self.end.wrapping_sub(self.start)).hash(state);
    }
}

impl Span {
    /// A span that covers nothing at the start of a file (for whole-file problems).
    pub const FILE: Span = Span { start: 0, end: 0, line: 1, col: 1 };
}

/// A position in a file: what diagnostics and provenance carry around.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc {
    pub file: FileId,
    pub span: Span,
}

/// One input text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path relative to the pod directory, `/`-separated (used in artifacts).
    pub name: String,
    pub text: Arc<str>,
    /// Holds secret values (`.env`): diagnostics point at a line, never quote it.
    pub sensitive: bool,
    /// Byte offsets of line starts, built on the first [`SourceFile::span`]: a hostile
    /// file with 100,000 mistakes must not cost 100,000 scans from its start.
    lines: std::sync::OnceLock<Vec<usize>>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> Self {
        SourceFile { name: name.into(), text: text.into(), sensitive: false, lines: std::sync::OnceLock::new() }
    }

    /// The span covering `start..end` bytes, with its line and column computed (a binary
    /// search for the line; the column counts characters from the line's start).
    pub fn span(&self, start: usize, end: usize) -> Span {
        let start = start.min(self.text.len());
        let end = end.clamp(start, self.text.len());
        let at = floor_char(&self.text, start);
        let lines = self.lines.get_or_init(|| {
            std::iter::once(0).chain(self.text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1)).collect()
        });
        let line = lines.partition_point(|&l| l <= at);
        let line_start = lines[line - 1];
        let col = self.text[line_start..at].chars().count() as u32 + 1;
        Span { start, end, line: line as u32, col }
    }

    /// The span of 1-based `line` (without its newline); the last line when past the end.
    pub fn line(&self, line: u32) -> Span {
        let start = self.text.split_inclusive('\n').take(line.saturating_sub(1) as usize).map(str::len).sum::<usize>();
        let end = self.text[start..].find('\n').map_or(self.text.len(), |n| start + n);
        self.span(start, end)
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// All input texts of one compile, in the order they were read.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<Arc<str>>) -> FileId {
        self.files.push(SourceFile::new(name, text));
        FileId(self.files.len() as u32 - 1)
    }

    /// Adds a file that holds secret values (see [`SourceFile::sensitive`]).
    pub fn add_sensitive(&mut self, name: impl Into<String>, text: impl Into<Arc<str>>) -> FileId {
        let id = self.add(name, text);
        self.files[id.0 as usize].sensitive = true;
        id
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn name(&self, id: FileId) -> &str {
        &self.get(id).name
    }

    /// Every file, in the order it was read.
    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (FileId(i as u32), f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_count_lines_and_characters() {
        let f = SourceFile::new("x", "ab\né\n\nxyz");
        assert_eq!((f.span(0, 1).line, f.span(0, 1).col), (1, 1));
        assert_eq!((f.span(3, 5).line, f.span(3, 5).col), (2, 1));
        assert_eq!((f.span(5, 6).line, f.span(5, 6).col), (2, 2));
        assert_eq!((f.span(7, 7).line, f.span(7, 7).col), (4, 1));
        assert_eq!((f.span(9, 99).line, f.span(9, 99).col), (4, 3));
        // Inside a multi-byte character: its start.
        assert_eq!(f.span(4, 4).col, 1);
    }
}
