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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub line: u32,
    pub col: u32,
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
}

impl SourceFile {
    /// The span covering `start..end` bytes, with its line and column computed.
    pub fn span(&self, start: usize, end: usize) -> Span {
        let start = start.min(self.text.len());
        let end = end.clamp(start, self.text.len());
        let before = &self.text[..floor_char(&self.text, start)];
        let line = before.bytes().filter(|&b| b == b'\n').count() as u32 + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before[line_start..].chars().count() as u32 + 1;
        Span { start, end, line, col }
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
        self.files.push(SourceFile { name: name.into(), text: text.into(), sensitive: false });
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
}
