//! A document parsed again one entry of its `services` mapping at a time: when an edit
//! lies inside one service's entry, that entry's text is parsed alone and put in place of
//! the old one in the previous tree, whose later nodes are moved by the edit's length.
//! This is what `compile --watch` does with the pod between two compiles (`kept.rs`).
//!
//! The result must be the tree a whole parse of the new text gives, node for node and
//! span for span, or nothing (the caller then parses the whole text). So an edit is
//! taken only where an entry's text cannot mean anything else in place than alone:
//!
//! - the old parse was plain (no anchor, alias or merge key), so no node stands anywhere
//!   but at its own text, and the new entry is plain too;
//! - `services` is a block mapping, the entry is not its last, and both it and the next
//!   entry start their lines at the same column, so the entry's text runs from its line
//!   to the next entry's line, and an entry parsed alone ends where it would end in place
//!   (each later line is indented past the key; the parse stops at the end of the text
//!   where in place it stops at the next key);
//! - the edit starts at the entry's key or after it (so the key, where a node before it
//!   that ends at the next token ends, stays put) and ends before the newline that ends
//!   the entry's text, so the next key still starts its line;
//! - no tab, no carriage return, no directive and no document marker in play (tabs and
//!   line breaks other than `\n` change how lines and indentation count);
//! - the new entry parses alone to one key, the same key where it was (same bytes, line
//!   and column), with the depth, node and byte budgets a whole parse would apply.

use super::{Kind, MAX_BYTES, MAX_DEPTH, MAX_NODES, Node, Parsed, parse_counted};
use crate::sourcemap::{FileId, SourceFile, Span};

/// The parse of `after` (file `file`), made from `parsed`, the parse of `before`, when
/// the two differ inside one service's entry; `None` when it cannot be (see the module).
pub(crate) fn splice(before: &str, mut parsed: Parsed, file: FileId, after: &SourceFile) -> Option<Parsed> {
    let (old, new) = (before.as_bytes(), after.text.as_bytes());
    if old == new {
        return Some(parsed);
    }
    if !parsed.plain
        || [old, new].iter().any(|t| memchr::memchr(b'\r', t).is_some() || t.starts_with(b"%") || memchr::memmem::find(t, b"\n%").is_some())
    {
        return None;
    }
    let at = Edit::between(old, new);
    let services = parsed.root.as_map()?.iter().position(|(k, v)| k.as_str() == Some("services") && v.as_map().is_some())?;
    let place = Place::of(old, &parsed.root.as_map()?[services].1, at.start)?;
    if at.old_end >= place.end {
        return None;
    }
    let delta = new.len() as isize - old.len() as isize;
    let text = after.text.get(place.start..place.end.checked_add_signed(delta)?)?;
    let (key, value) = alone(text, file, after, &place)?;
    let Kind::Map(entries) = &parsed.root.as_map()?[services].1.kind else { return None };
    let (old_key, old_value) = &entries[place.index];
    if key.kind != old_key.kind || key.loc.span != old_key.loc.span {
        return None;
    }
    let weight = |nodes: [&Node; 2]| nodes.iter().map(|n| n.weight()).fold((0, 0), super::add);
    let (gone, came) = (weight([old_key, old_value]), weight([&key, &value]));
    let nodes = parsed.nodes.saturating_sub(gone.0).saturating_add(came.0);
    let bytes = parsed.bytes.saturating_sub(gone.1).saturating_add(came.1);
    if nodes > MAX_NODES || bytes > MAX_BYTES {
        return None;
    }
    let lines = count_lines(text.as_bytes()) as i64 - count_lines(&old[place.start..place.end]) as i64;
    let moved = Moved { from: place.end, bytes: delta, lines };
    moved.apply(&mut parsed.root);
    if let Kind::Map(root) = &mut parsed.root.kind
        && let Kind::Map(entries) = &mut root[services].1.kind
    {
        entries[place.index] = (key, value);
    }
    Some(Parsed { root: parsed.root, nodes, bytes, plain: true })
}

/// Where two texts differ: from `start`, to `old_end` in the old one.
struct Edit {
    start: usize,
    old_end: usize,
}

impl Edit {
    fn between(old: &[u8], new: &[u8]) -> Edit {
        let start = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        let room = old.len().min(new.len()) - start;
        let suffix = old.iter().rev().zip(new.iter().rev()).take(room).take_while(|(a, b)| a == b).count();
        Edit { start, old_end: old.len() - suffix }
    }
}

/// One entry of the old `services` mapping as text: from the start of its key's line to
/// the start of the next entry's line.
struct Place {
    index: usize,
    start: usize,
    end: usize,
    /// The key's column and line.
    col: u32,
    line: u32,
}

impl Place {
    /// The entry whose text holds byte `at` of `old`, if it has the shape the module needs.
    fn of(old: &[u8], services: &Node, at: usize) -> Option<Place> {
        if old.get(services.loc.span.start) == Some(&b'{') {
            return None;
        }
        let entries = services.as_map()?;
        let index = entries.partition_point(|(k, _)| k.loc.span.start <= at).checked_sub(1)?;
        let (key, next) = (&entries[index].0.loc.span, &entries.get(index + 1)?.0.loc.span);
        let (start, end) = (line_start(old, key)?, line_start(old, next)?);
        // The edit starts at the key or after it: a node before the entry that ends at the
        // next token (an empty value written `? x`) ends at this key, which stays put.
        (key.col == next.col && key.col > 1 && key.start <= at).then_some(Place { index, start, end, col: key.col, line: key.line })
    }
}

/// The start of `span`'s line, when only spaces come before it there.
fn line_start(text: &[u8], span: &Span) -> Option<usize> {
    let start = text[..span.start].iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
    text[start..span.start].iter().all(|&c| c == b' ').then_some(start)
}

/// `text` (an entry's lines, at `place` in the old text) parsed alone: its one key and
/// value, their spans where they are in the new text.
fn alone(text: &str, file: FileId, after: &SourceFile, place: &Place) -> Option<(Node, Node)> {
    let indented = text.split_inclusive('\n').skip(1).all(|line| {
        let rest = line.trim_start_matches(' ');
        rest.trim_end().is_empty() || rest.starts_with('#') || line.len() - rest.len() >= place.col as usize
    });
    if !text.ends_with('\n') || text.contains('\t') || !indented {
        return None;
    }
    // In place, the entry's collections nest inside the document's mapping and `services`;
    // alone, inside the one mapping the entry makes: one level less to spend.
    let parsed = parse_counted(file, &SourceFile::new(after.name.clone(), text), MAX_DEPTH - 1).ok()?;
    let Parsed { root: Node { kind: Kind::Map(mut entries), .. }, plain: true, .. } = parsed else { return None };
    let (mut key, mut value) = entries.pop().filter(|_| entries.is_empty())?;
    // A node that runs to the end of the text (a block scalar, or an empty value placed at
    // the next token) would run to the next key in place.
    if [&key, &value].into_iter().any(|n| reaches(n, text.len())) {
        return None;
    }
    let moved = Moved { from: 0, bytes: place.start as isize, lines: i64::from(place.line) - 1 };
    moved.apply(&mut key);
    moved.apply(&mut value);
    Some((key, value))
}

/// What an edit does to the spans at and after `from`: moved by `bytes` and `lines`; a
/// span that starts before and ends at or after it grows by `bytes`.
struct Moved {
    from: usize,
    bytes: isize,
    lines: i64,
}

impl Moved {
    fn apply(&self, node: &mut Node) {
        let span = &mut node.loc.span;
        if span.end < self.from {
            // A node's children lie inside its span: nothing under it moves either.
            return;
        }
        if span.start >= self.from {
            span.start = span.start.saturating_add_signed(self.bytes);
            span.line = u32::try_from(i64::from(span.line) + self.lines).unwrap_or(u32::MAX);
        }
        span.end = span.end.saturating_add_signed(self.bytes);
        match &mut node.kind {
            Kind::Scalar { .. } => {}
            Kind::Seq(items) => items.iter_mut().for_each(|n| self.apply(n)),
            Kind::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
                self.apply(k);
                self.apply(v);
            }),
        }
    }
}

/// Whether `node` or a node under it reaches byte `end`.
fn reaches(node: &Node, end: usize) -> bool {
    node.loc.span.end >= end
        || match &node.kind {
            Kind::Scalar { .. } => false,
            Kind::Seq(items) => items.iter().any(|n| reaches(n, end)),
            Kind::Map(entries) => entries.iter().any(|(k, v)| reaches(k, end) || reaches(v, end)),
        }
}

fn count_lines(text: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', text).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sourcemap::SourceMap;

    const POD: &str = "x-claw:\n  pod: p\nservices:\n  a:\n    image: x\n    x-claw:\n      tools: [t1, t2]\n\n  # b's\n  b:\n    image: y\n  c: {image: z}\nvolumes: {}\n";

    fn whole(text: &str) -> Option<Parsed> {
        let mut map = SourceMap::default();
        let id = map.add("claw-pod.yml", text);
        super::super::parse_counted(id, map.get(id), MAX_DEPTH).ok()
    }

    fn spliced(before: &str, after: &str) -> Option<Parsed> {
        let mut map = SourceMap::default();
        let id = map.add("claw-pod.yml", after);
        splice(before, whole(before).expect("the old text parses"), id, map.get(id))
    }

    /// Every splice taken is the whole parse; returns whether it was taken.
    fn taken(before: &str, after: &str) -> bool {
        let got = spliced(before, after);
        if let Some(got) = &got {
            assert_eq!(Some(got), whole(after).as_ref(), "{after:?}");
        }
        got.is_some()
    }

    #[test]
    fn an_edit_inside_one_entry_is_the_whole_parse() {
        for (from, to) in [
            ("[t1, t2]", "[t1]"),
            ("[t1, t2]", "\n        - t1\n        - t2\n        - t3"),
            ("image: x\n", "image: x\n    environment: {A: '1'}\n"),
            ("image: y", "image: \"y\n      z\""),
            ("image: y", "image: |\n      y\n\n\n      z\n    other: 1"),
            ("# b's", "# b's, and more"),
            ("image: y\n", "image:\n"),
            ("  b:\n", "  b:  \n"),
            ("\n\n  # b", "\n  # b"),
        ] {
            let after = POD.replacen(from, to, 1);
            assert!(taken(POD, &after), "{to:?}");
        }
        assert!(taken(POD, POD), "no edit");
        let before = "services:\n  a:\n    ? x\n  b:\n    image: y\n  c: {}\n";
        assert!(!taken(before, &before.replace("  b:", "  # b\n  b:")), "a line put in before the key");
        assert!(taken(before, &before.replace("image: y", "image: z\n    # more")));
    }

    #[test]
    fn an_edit_that_could_mean_something_else_in_place_is_parsed_whole() {
        for (from, to) in [
            // Another key, or another column, or outside the services, or in the last entry.
            ("  b:\n", "  bb:\n"),
            ("  b:\n    image: y\n", "   b:\n     image: y\n"),
            ("pod: p", "pod: q"),
            ("{image: z}", "{image: w}"),
            ("volumes: {}", "volumes: {v: {}}"),
            // Two entries, or one that runs into the next or out of the mapping.
            ("    image: y\n", "    image: y\n  d: {}\n"),
            ("    image: y\n", "    image: y\nother: 1\n"),
            ("image: y\n", "image: \"y\n"),
            ("image: y\n", "image: [y\n"),
            ("image: y\n", "image: y"),
            // Something that ends where the next token starts: in place, the next key.
            ("image: y\n", "image: |\n      y\n"),
            ("image: y\n", "image:\n    ? x\n"),
            // Anchors, aliases, merges, tabs, carriage returns, directives, documents.
            ("image: y", "image: &i y"),
            ("image: y", "<<: {image: y}"),
            ("image: y", "image:\ty"),
            ("image: y\n", "image: y\r\n"),
            ("image: y\n", "image: y\n---\n"),
        ] {
            let after = POD.replacen(from, to, 1);
            assert_ne!(after, POD);
            assert!(!taken(POD, &after), "{to:?}");
        }
        assert!(!taken(&format!("%YAML 1.2\n---\n{POD}"), &format!("%YAML 1.2\n---\n{}", POD.replacen("y\n", "w\n", 1))));
        let anchored = POD.replacen("image: x", "image: &x x", 1);
        assert!(!taken(&anchored, &anchored.replacen("image: y", "image: w", 1)), "the old parse has an anchor");
        let flow = "services: {\n  a: {image: x},\n  b: {image: y}\n}\n";
        assert!(!taken(flow, &flow.replacen("{image: x}", "{image: w}", 1)), "a flow mapping");
    }

    /// The repository's pods (examples and test cases), a byte cut at 120 places
    /// and a line put in at every third line: what is taken is the whole parse.
    #[test]
    fn edits_of_the_repositorys_pods_are_the_whole_parse_or_not_taken() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut pods = Vec::new();
        let mut dirs = vec![root.join("examples"), root.join("tests")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.file_name().is_some_and(|n| n == "claw-pod.yml") {
                    pods.push(std::fs::read_to_string(path).unwrap());
                }
            }
        }
        assert!(pods.len() > 20, "{}", pods.len());
        let mut seen = 0;
        for pod in pods.iter().filter(|p| whole(p).is_some_and(|p| p.plain)) {
            for at in (0..pod.len()).step_by(pod.len() / 120 + 1).filter(|&i| pod.is_char_boundary(i) && pod.is_char_boundary(i + 1)) {
                let mut cut = pod.clone();
                cut.remove(at);
                seen += usize::from(taken(pod, &cut));
            }
            for (at, _) in pod.match_indices('\n').step_by(3) {
                for line in ["\n      extra: 1", "\n  other: {}"] {
                    seen += usize::from(taken(pod, &format!("{}{line}{}", &pod[..at], &pod[at..])));
                }
            }
        }
        assert!(seen > 1000, "most edits inside an entry are taken: {seen}");
    }

    #[test]
    fn an_entry_alone_is_held_to_the_depth_a_whole_parse_allows() {
        let deep = |n: usize| format!("services:\n  a:\n    x: {}{}\n  b: {{}}\n", "[".repeat(n), "]".repeat(n));
        let fits = (1..MAX_DEPTH).rev().find(|&n| whole(&deep(n)).is_some()).expect("some depth parses");
        assert!(taken(&deep(1), &deep(fits)));
        assert!(whole(&deep(fits + 1)).is_none() && !taken(&deep(1), &deep(fits + 1)));
    }

    /// A pod with more of YAML in its middle entry: quoted and multi-line scalars, a
    /// block scalar followed by a key, a flow list over lines, comments, a nested list;
    /// before it, an entry whose last value is empty (placed at the next token).
    const RICH: &str = "services:\n  a:\n    ? x\n  'b':\n    image: \"y\"   # quoted\n    command: |\n      run\n\n    entrypoint: >-\n      one\n      two\n    note: plain\n      continued\n    x-claw:\n      tools:\n        - service: t\n          allow: [x,\n            y]\n      # aside\n  c:\n    image: z\n";

    /// Every way of cutting a byte out of a pod, or putting one of YAML's own characters
    /// in: whatever the splice takes is what a whole parse gives.
    #[test]
    fn any_one_byte_edit_is_the_whole_parse_or_not_taken() {
        let mut seen = 0;
        for pod in [POD, RICH] {
            assert!(whole(pod).is_some_and(|p| p.plain));
            for at in 0..pod.len() {
                let mut cut = pod.to_string();
                cut.remove(at);
                seen += usize::from(taken(pod, &cut));
                for c in [' ', '\n', ':', '-', '#', '"', '\'', '[', ']', '{', ',', '|', '>', '&', '*', '!', '?', '%', 'k'] {
                    let mut put = pod.to_string();
                    put.insert(at, c);
                    seen += usize::from(taken(pod, &put));
                }
            }
        }
        assert!(seen > 2000, "most edits inside an entry are taken: {seen}");
    }
}
