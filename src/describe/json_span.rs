//! Finds the source span of a value inside a JSON text, given its path.
//!
//! serde_json keeps no positions, so descriptor diagnostics locate values by walking the
//! raw text along the path. The text has already parsed, so the walker may assume valid
//! JSON; on anything unexpected it returns what it has (the enclosing value).
//!
//! [`locate`] walks from the start of the text each time, which is fine for one value;
//! a pass that reports on thousands of values uses a [`Locator`], which scans each
//! object and array on the way once and turns offsets into lines and columns without
//! rescanning the text (otherwise a descriptor of 20,000 bad tools takes minutes).

use crate::sourcemap::{SourceFile, Span};
use std::collections::HashMap;

/// One step of a path into a JSON document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// Byte range of the value at `path`, or of the deepest ancestor that could be found.
pub(crate) fn locate(text: &str, path: &[Seg]) -> (usize, usize) {
    let b = text.as_bytes();
    let mut pos = skip_ws(b, 0);
    for seg in path {
        let found = match (seg, b.get(pos)) {
            (Seg::Key(k), Some(b'{')) => find_key(text, pos, k),
            (Seg::Index(i), Some(b'[')) => find_index(b, pos, *i),
            _ => None,
        };
        match found {
            Some(p) => pos = p,
            None => break,
        }
    }
    (pos, value_end(b, pos))
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    // Schemas are mostly strings: jump between quotes and backslashes, not byte by byte.
    while let Some(k) = b.get(i..).and_then(|rest| memchr::memchr2(b'"', b'\\', rest)) {
        if b[i + k] == b'"' {
            return i + k + 1;
        }
        i += k + 2;
    }
    b.len()
}

/// End of the value starting at `i` (iterative, so depth is no concern).
fn value_end(b: &[u8], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'"' => {
                j = string_end(b, j);
                if depth == 0 {
                    return j;
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    return j;
                }
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            b',' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => return j,
            _ => {}
        }
        j += 1;
    }
    j
}

fn find_key(text: &str, obj: usize, key: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = skip_ws(b, obj + 1);
    // Later duplicates win in serde_json, so keep the last match.
    let mut found = None;
    while i < b.len() && b[i] == b'"' {
        let kend = string_end(b, i);
        let k: Option<String> = serde_json::from_str(&text[i..kend]).ok();
        let colon = skip_ws(b, kend);
        let vstart = skip_ws(b, colon + 1);
        if k.as_deref() == Some(key) {
            found = Some(vstart);
        }
        let vend = value_end(b, vstart);
        i = skip_ws(b, vend);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        } else {
            break;
        }
    }
    found
}

fn find_index(b: &[u8], arr: usize, index: usize) -> Option<usize> {
    let mut i = skip_ws(b, arr + 1);
    for n in 0.. {
        if i >= b.len() || b[i] == b']' {
            return None;
        }
        if n == index {
            return Some(i);
        }
        i = skip_ws(b, value_end(b, i));
        if b.get(i) != Some(&b',') {
            return None;
        }
        i = skip_ws(b, i + 1);
    }
    None
}

/// [`locate`] and [`SourceFile::span`] for many paths into one text, in time linear in
/// the text plus what each path walks.
pub(crate) struct Locator<'t> {
    src: &'t SourceFile,
    /// Object start → its keys' value starts (the last of duplicate keys wins).
    objects: HashMap<usize, HashMap<String, usize>>,
    /// Array start → its elements' starts.
    arrays: HashMap<usize, Vec<usize>>,
    /// Offsets of every `\n`, built on first use.
    newlines: Option<Vec<usize>>,
    /// Characters before every [`BLOCK`]-byte boundary, built on first use.
    chars: Option<Vec<usize>>,
}

const BLOCK: usize = 4096;

impl<'t> Locator<'t> {
    pub(crate) fn new(src: &'t SourceFile) -> Self {
        Locator { src, objects: HashMap::new(), arrays: HashMap::new(), newlines: None, chars: None }
    }

    /// What [`locate`] gives, as a [`Span`] with its line and column.
    pub(crate) fn span_of(&mut self, path: &[Seg]) -> Span {
        let (s, e) = self.locate(path);
        self.span(s, e)
    }

    /// What [`locate`] gives, scanning each container on the way at most once per text.
    pub(crate) fn locate(&mut self, path: &[Seg]) -> (usize, usize) {
        self.walk(path.iter().map(|seg| match seg {
            Seg::Key(k) => (Some(k.as_str()), None),
            Seg::Index(i) => (None, Some(*i)),
        }))
    }

    /// [`Locator::span_of`] for a path of names as `clawc compat` reports them: each name is
    /// an object key, or an array index when the value there is an array.
    pub(crate) fn span_of_names(&mut self, path: &[String]) -> Span {
        let (s, e) = self.walk(path.iter().map(|p| (Some(p.as_str()), p.parse::<usize>().ok())));
        self.span(s, e)
    }

    /// Follows each step (a key for an object, an index for an array) as far as the text
    /// has it: the deepest value reached, start and end.
    fn walk<'p>(&mut self, steps: impl Iterator<Item = (Option<&'p str>, Option<usize>)>) -> (usize, usize) {
        let text: &str = &self.src.text;
        let b = text.as_bytes();
        let mut pos = skip_ws(b, 0);
        for (key, index) in steps {
            let found = match (key, index, b.get(pos)) {
                (Some(k), _, Some(b'{')) => self.objects.entry(pos).or_insert_with(|| object_keys(text, pos)).get(k).copied(),
                (_, Some(i), Some(b'[')) => self.arrays.entry(pos).or_insert_with(|| array_elements(b, pos)).get(i).copied(),
                _ => None,
            };
            match found {
                Some(p) => pos = p,
                None => break,
            }
        }
        (pos, value_end(b, pos))
    }

    /// The same [`Span`] as [`SourceFile::span`], by binary search instead of a rescan.
    pub(crate) fn span(&mut self, start: usize, end: usize) -> Span {
        let text: &str = &self.src.text;
        let start = start.min(text.len());
        let end = end.clamp(start, text.len());
        let at = floor_char(text, start);
        let newlines = self.newlines.get_or_insert_with(|| memchr::memchr_iter(b'\n', text.as_bytes()).collect());
        let line = newlines.partition_point(|&n| n < at);
        let line_start = if line == 0 { 0 } else { newlines[line - 1] + 1 };
        let chars = self.chars.get_or_insert_with(|| char_marks(text));
        let col = chars_before(text, chars, at) - chars_before(text, chars, line_start);
        Span { start, end, line: line as u32 + 1, col: col as u32 + 1 }
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Characters before each multiple of [`BLOCK`] bytes.
fn char_marks(text: &str) -> Vec<usize> {
    let mut marks = vec![0];
    for block in text.as_bytes().chunks(BLOCK) {
        marks.push(marks[marks.len() - 1] + char_starts(block));
    }
    marks
}

fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&c| (c as i8) >= -0x40).count()
}

/// Characters before byte `at` (a char boundary).
fn chars_before(text: &str, marks: &[usize], at: usize) -> usize {
    let block = at / BLOCK;
    marks[block] + char_starts(&text.as_bytes()[block * BLOCK..at])
}

/// Every key of the object at `obj` → the start of its value (later duplicates win).
fn object_keys(text: &str, obj: usize) -> HashMap<String, usize> {
    let b = text.as_bytes();
    let mut out = HashMap::new();
    let mut i = skip_ws(b, obj + 1);
    while i < b.len() && b[i] == b'"' {
        let kend = string_end(b, i);
        let k: Option<String> = serde_json::from_str(&text[i..kend]).ok();
        let colon = skip_ws(b, kend);
        let vstart = skip_ws(b, colon + 1);
        if let Some(k) = k {
            out.insert(k, vstart);
        }
        i = skip_ws(b, value_end(b, vstart));
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        } else {
            break;
        }
    }
    out
}

/// The start of every element of the array at `arr`.
fn array_elements(b: &[u8], arr: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = skip_ws(b, arr + 1);
    while i < b.len() && b[i] != b']' {
        out.push(i);
        i = skip_ws(b, value_end(b, i));
        if b.get(i) != Some(&b',') {
            break;
        }
        i = skip_ws(b, i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_values() {
        let t = r#"{"a": [1, {"b\"x": "v,}"}, [2]], "c": true}"#;
        let (s, e) = locate(t, &[Seg::Key("a".into()), Seg::Index(1), Seg::Key("b\"x".into())]);
        assert_eq!(&t[s..e], "\"v,}\"");
        let (s, e) = locate(t, &[Seg::Key("a".into()), Seg::Index(2)]);
        assert_eq!(&t[s..e], "[2]");
        let (s, e) = locate(t, &[Seg::Key("c".into())]);
        assert_eq!(&t[s..e], "true");
        let (s, e) = locate(t, &[Seg::Key("a".into()), Seg::Index(9)]);
        assert_eq!(&t[s..e], r#"[1, {"b\"x": "v,}"}, [2]]"#);
    }

    #[test]
    fn the_locator_agrees_with_locate_and_span() {
        let t = "{\"a\": [1, {\"b\": \"v\"}, [2]],\n \"é\": {\"c\": [true,\n  \"ü\", 3]}, \"a\": [9, 8]}";
        let src = SourceFile::new("t.json", t);
        let mut loc = Locator::new(&src);
        let paths = [
            vec![Seg::Key("a".into()), Seg::Index(1)],
            vec![Seg::Key("é".into()), Seg::Key("c".into()), Seg::Index(2)],
            vec![Seg::Key("é".into()), Seg::Key("c".into()), Seg::Index(1)],
            vec![Seg::Key("nope".into())],
            vec![Seg::Key("a".into()), Seg::Index(7)],
        ];
        for p in &paths {
            let (s, e) = locate(t, p);
            assert_eq!(loc.locate(p), (s, e), "{p:?}");
            assert_eq!(loc.span_of(p), src.span(s, e), "{p:?}");
        }
        for at in 0..=t.len() {
            assert_eq!(loc.span(at, at), src.span(at, at), "at {at}");
        }
    }
}
