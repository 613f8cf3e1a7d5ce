//! A YAML node tree where every node knows its byte span.
//!
//! Built from `saphyr-parser` events rather than through serde so that (a) every node
//! carries its position for diagnostics and provenance, (b) aliases are expanded under a
//! budget (an alias bomb becomes a diagnostic, not an OOM), (c) nesting depth is bounded
//! before anything recurses over the tree, and (d) merge keys (`<<`) and duplicate keys
//! follow Compose. Scalars keep their source text; typing happens where the pod grammar
//! knows what a field means.

use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, Loc, SourceFile, Span};
use saphyr_parser::{Event, Parser, ScalarStyle};
use std::collections::HashMap;

pub(crate) mod kept;
mod splice;
mod stored;

/// Deepest nesting accepted. Compose files are shallow; this only stops hostile input.
pub(crate) const MAX_DEPTH: usize = 64;
/// Most nodes one document may produce, counting every alias expansion.
pub(crate) const MAX_NODES: usize = 1_000_000;
/// Most scalar bytes one document may produce, counting every alias expansion and every
/// anchored copy: four times the 8 MiB input limit. A node budget alone lets a few large
/// scalars, aliased thousands of times, exhaust memory.
pub(crate) const MAX_BYTES: usize = 4 * crate::disk::MAX_INPUT_BYTES as usize;

pub(crate) use crate::diag::catalogue::yaml as codes;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub kind: Kind,
    pub loc: Loc,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    /// Source text, and whether it was plain (unquoted) and untagged as a string.
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    pub(crate) fn is_null(&self) -> bool {
        matches!(&self.kind, Kind::Scalar { text, plain: true } if matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    /// The scalar's text, for any non-null scalar (YAML `80` reads as `"80"`, as Compose does).
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar { text, .. } if !self.is_null() => Some(text),
            _ => None,
        }
    }

    pub(crate) fn as_bool(&self) -> Option<bool> {
        match &self.kind {
            Kind::Scalar { text, plain: true } => match text.as_str() {
                "true" | "True" | "TRUE" => Some(true),
                "false" | "False" | "FALSE" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    pub(crate) fn as_i64(&self) -> Option<i64> {
        match &self.kind {
            Kind::Scalar { text, plain: true } => parse_int(text),
            _ => None,
        }
    }

    pub(crate) fn as_seq(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub(crate) fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.kind {
            Kind::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The value under a string key of a mapping.
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
    }

    /// The key node of a mapping entry (for pointing at a key rather than its value).
    pub(crate) fn key_node(&self, key: &str) -> Option<&Node> {
        self.as_map()?.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(k, _)| k)
    }

    /// What kind of node this is, in the words error messages use.
    pub(crate) fn kind_name(&self) -> &'static str {
        match &self.kind {
            Kind::Seq(_) => "a list",
            Kind::Map(_) => "a mapping",
            Kind::Scalar { .. } if self.is_null() => "null",
            Kind::Scalar { .. } if self.as_bool().is_some() => "a boolean",
            Kind::Scalar { .. } if self.as_i64().is_some() => "a number",
            Kind::Scalar { .. } => "a string",
        }
    }

    /// Nodes and scalar bytes in this tree (what a copy of it costs).
    pub(crate) fn weight(&self) -> (usize, usize) {
        match &self.kind {
            Kind::Scalar { text, .. } => (1, text.len()),
            Kind::Seq(items) => items.iter().map(Node::weight).fold((1, 0), add),
            Kind::Map(entries) => entries.iter().flat_map(|(k, v)| [k.weight(), v.weight()]).fold((1, 0), add),
        }
    }
}

fn add(a: (usize, usize), b: (usize, usize)) -> (usize, usize) {
    (a.0 + b.0, a.1 + b.1)
}

fn parse_int(text: &str) -> Option<i64> {
    let t = text.strip_prefix('+').unwrap_or(text);
    if let Some(oct) = t.strip_prefix("0o") {
        return i64::from_str_radix(oct, 8).ok();
    }
    if let Some(hex) = t.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok();
    }
    t.parse().ok()
}

/// Parses one YAML document. An empty document gives a null scalar.
pub(crate) fn parse(file: FileId, src: &SourceFile) -> Result<Node, Vec<Diagnostic>> {
    parse_counted(file, src, MAX_DEPTH).map(|p| p.root)
}

/// A document's tree and what its parse counted against the budgets.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Parsed {
    pub root: Node,
    /// Nodes and scalar bytes charged (with [`Parsed::plain`], exactly the tree's weight).
    pub nodes: usize,
    pub bytes: usize,
    /// No anchor, alias or merge key: every node is where its text is, once.
    pub plain: bool,
}

/// [`parse`], nesting at most `max_depth` collections, with the counts.
pub(crate) fn parse_counted(file: FileId, src: &SourceFile, max_depth: usize) -> Result<Parsed, Vec<Diagnostic>> {
    let mut builder = Builder::new(file, src);
    builder.max_depth = max_depth;
    let root = builder.run()?;
    Ok(Parsed { root, nodes: builder.nodes, bytes: builder.bytes, plain: builder.plain })
}

enum Frame {
    Seq { items: Vec<Node>, start: Span, anchor: usize },
    Map { entries: Vec<(Node, Node)>, key: Option<Node>, start: Span, anchor: usize },
}

struct Builder<'a> {
    file: FileId,
    src: &'a SourceFile,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    nodes: usize,
    /// Scalar bytes produced, copies included (bounded by [`MAX_BYTES`]).
    bytes: usize,
    root: Option<Node>,
    errors: Vec<Diagnostic>,
    cursor: CharCursor<'a>,
    max_depth: usize,
    /// No anchor, alias or merge key seen.
    plain: bool,
}

impl<'a> Builder<'a> {
    fn new(file: FileId, src: &'a SourceFile) -> Self {
        Self {
            file,
            src,
            stack: Vec::new(),
            anchors: HashMap::new(),
            nodes: 0,
            bytes: 0,
            root: None,
            errors: Vec::new(),
            cursor: CharCursor::new(&src.text),
            max_depth: MAX_DEPTH,
            plain: true,
        }
    }

    fn loc(&mut self, span: saphyr_parser::Span) -> Loc {
        let start = self.cursor.byte(span.start.index());
        let end = self.cursor.byte(span.end.index()).max(start);
        let span = Span { start, end, line: span.start.line() as u32, col: span.start.col() as u32 + 1 };
        Loc { file: self.file, span }
    }

    fn fail(&mut self, code: crate::diag::Code, msg: impl Into<String>, loc: Loc, help: &str) -> Result<Node, Vec<Diagnostic>> {
        self.errors.push(Diagnostic::error(code, msg).at(loc).help(help));
        Err(std::mem::take(&mut self.errors))
    }

    fn run(&mut self) -> Result<Node, Vec<Diagnostic>> {
        let text = self.src.text.clone();
        let mut documents = 0;
        for item in Parser::new_from_str(&text) {
            let (event, span) = match item {
                Ok(ev) => ev,
                Err(e) => {
                    let m = e.marker();
                    let loc = self.loc(saphyr_parser::Span::empty(*m));
                    return self.fail(codes::SYNTAX, format!("invalid YAML: {}", e.info()), loc, "fix the YAML syntax at this position");
                }
            };
            let loc = self.loc(span);
            match event {
                Event::DocumentStart(_) => {
                    documents += 1;
                    if documents > 1 {
                        return self.fail(
                            codes::MULTIPLE_DOCUMENTS,
                            "the file holds more than one YAML document",
                            loc,
                            "a pod file is a single Compose document; remove the extra `---`",
                        );
                    }
                }
                Event::Scalar(value, style, anchor, tag) => {
                    let is_str_tag = tag.as_ref().is_some_and(|t| t.suffix == "str" || t.suffix.ends_with(":str"));
                    let plain = style == ScalarStyle::Plain && !is_str_tag;
                    self.charge(0, value.len(), loc)?;
                    let node = Node { kind: Kind::Scalar { text: value.into_owned(), plain }, loc };
                    self.finish(node, anchor)?;
                }
                Event::Alias(id) => {
                    self.plain = false;
                    let Some(node) = self.anchors.get(&id) else {
                        return self.fail(
                            codes::SYNTAX,
                            "alias refers to an unknown anchor",
                            loc,
                            "define the anchor (`&name`) before using it",
                        );
                    };
                    let (nodes, bytes) = node.weight();
                    let mut node = node.clone();
                    node.loc = loc;
                    // `finish` counts the node itself.
                    self.charge(nodes - 1, bytes, loc)?;
                    self.finish(node, 0)?;
                }
                Event::SequenceStart(anchor, _) => {
                    self.push(Frame::Seq { items: Vec::new(), start: loc.span, anchor }, loc)?;
                }
                Event::MappingStart(anchor, _) => {
                    self.push(Frame::Map { entries: Vec::new(), key: None, start: loc.span, anchor }, loc)?;
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let frame = self.stack.pop().expect("parser balances start and end events");
                    let (node, anchor) = self.close(frame, loc)?;
                    self.finish(node, anchor)?;
                }
                Event::StreamEnd => break,
                Event::Nothing | Event::StreamStart | Event::DocumentEnd => {}
            }
        }
        let loc = Loc { file: self.file, span: Span::FILE };
        Ok(self.root.take().unwrap_or(Node { kind: Kind::Scalar { text: String::new(), plain: true }, loc }))
    }

    /// Charges a copy (an alias expansion, an anchored node, a scalar) against the node
    /// and byte budgets; an alias bomb stops here, before the copy is made.
    fn charge(&mut self, nodes: usize, bytes: usize, loc: Loc) -> Result<(), Vec<Diagnostic>> {
        self.nodes += nodes;
        self.bytes += bytes;
        let over = if self.nodes > MAX_NODES {
            format!("aliases expand to more than {MAX_NODES} nodes")
        } else if self.bytes > MAX_BYTES {
            format!("aliases expand to more than {} MiB of text", MAX_BYTES >> 20)
        } else {
            return Ok(());
        };
        self.fail(codes::ALIAS_BUDGET, over, loc, "this looks like an alias bomb; expand fewer aliases").map(|_| ())
    }

    fn push(&mut self, frame: Frame, loc: Loc) -> Result<(), Vec<Diagnostic>> {
        if self.stack.len() >= self.max_depth {
            return self
                .fail(
                    codes::TOO_DEEP,
                    format!("nesting deeper than {MAX_DEPTH} levels"),
                    loc,
                    "a pod file never needs this depth; flatten the structure",
                )
                .map(|_| ());
        }
        self.stack.push(frame);
        Ok(())
    }

    fn close(&mut self, frame: Frame, end: Loc) -> Result<(Node, usize), Vec<Diagnostic>> {
        // A flow collection ends at its `}` or `]`. A block collection's end event sits where
        // the next token starts (the next key, past newlines, indentation and comments), so
        // its own text ends with its last child: a label drawn on it must not run into the
        // next key.
        let text = self.src.text.as_bytes();
        let span_to = |start: Span, children: &mut dyn Iterator<Item = &Node>| {
            let flow = matches!(text.get(start.start), Some(b'{' | b'['));
            let last_child = children.map(|c| c.loc.span).filter(|s| s.end > s.start).map(|s| s.end).max();
            let end = match last_child {
                Some(e) if !flow => e,
                // The closing bracket's event may run on over a trailing comment.
                _ if flow && matches!(text.get(end.span.start), Some(b'}' | b']')) => end.span.start + 1,
                _ => end.span.end,
            };
            Span { end: end.max(start.end), ..start }
        };
        match frame {
            Frame::Seq { items, start, anchor } => {
                let span = span_to(start, &mut items.iter());
                Ok((Node { kind: Kind::Seq(items), loc: Loc { file: self.file, span } }, anchor))
            }
            Frame::Map { entries, start, anchor, .. } => {
                let span = span_to(start, &mut entries.iter().flat_map(|(k, v)| [k, v]));
                let loc = Loc { file: self.file, span };
                let entries = self.merge_and_check(entries)?;
                Ok((Node { kind: Kind::Map(entries), loc }, anchor))
            }
        }
    }

    /// Applies `<<` merge keys (explicit keys win, earlier merged maps win) and rejects
    /// duplicate keys, as Compose does.
    fn merge_and_check(&mut self, entries: Vec<(Node, Node)>) -> Result<Vec<(Node, Node)>, Vec<Diagnostic>> {
        let mut own = Vec::with_capacity(entries.len());
        let mut merged = Vec::new();
        for (k, v) in entries {
            let is_merge = matches!(&k.kind, Kind::Scalar { text, plain: true } if text == "<<");
            if !is_merge {
                own.push((k, v));
                continue;
            }
            self.plain = false;
            let sources: Vec<Node> = match v.kind {
                Kind::Map(_) => vec![v],
                Kind::Seq(items) if items.iter().all(|i| i.as_map().is_some()) => items,
                _ => {
                    return self
                        .fail(
                            codes::BAD_MERGE,
                            "a merge key `<<` needs a mapping or a list of mappings",
                            v.loc,
                            "merge an anchored mapping: `<<: *defaults`",
                        )
                        .map(|_| Vec::new());
                }
            };
            for src in sources {
                if let Kind::Map(es) = src.kind {
                    merged.extend(es);
                }
            }
        }
        let mut seen: HashMap<String, Loc> = HashMap::new();
        for (k, _) in &own {
            let key = key_text(k);
            if let Some(first) = seen.insert(key.clone(), k.loc) {
                let msg = format!("duplicate key `{key}` (first defined on line {})", first.span.line);
                return self.fail(codes::DUPLICATE_KEY, msg, k.loc, "remove one of the two entries").map(|_| Vec::new());
            }
        }
        for (k, v) in merged {
            if seen.insert(key_text(&k), k.loc).is_none() {
                own.push((k, v));
            }
        }
        Ok(own)
    }

    fn finish(&mut self, node: Node, anchor: usize) -> Result<(), Vec<Diagnostic>> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            let loc = node.loc;
            return self
                .fail(codes::ALIAS_BUDGET, format!("document has more than {MAX_NODES} nodes"), loc, "split or shrink the file")
                .map(|_| ());
        }
        if anchor != 0 {
            self.plain = false;
            // Keeping the anchor is a copy; nested anchors would otherwise multiply the tree.
            let (nodes, bytes) = node.weight();
            self.charge(nodes, bytes, node.loc)?;
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => *key = Some(node),
                Some(k) => entries.push((k, node)),
            },
        }
        Ok(())
    }
}

fn key_text(k: &Node) -> String {
    match &k.kind {
        Kind::Scalar { text, .. } => text.clone(),
        _ => format!("<{} at line {}>", k.kind_name(), k.loc.span.line),
    }
}

/// Converts the parser's character indices to byte offsets. Events arrive mostly in
/// order, so a cursor that walks forward (and back when needed) keeps this linear.
struct CharCursor<'a> {
    text: &'a str,
    ascii: bool,
    chars: usize,
    bytes: usize,
}

impl<'a> CharCursor<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, ascii: text.is_ascii(), chars: 0, bytes: 0 }
    }

    fn byte(&mut self, char_index: usize) -> usize {
        if self.ascii {
            return char_index.min(self.text.len());
        }
        if char_index < self.chars {
            self.chars = 0;
            self.bytes = 0;
        }
        for c in self.text[self.bytes..].chars() {
            if self.chars == char_index {
                break;
            }
            self.chars += 1;
            self.bytes += c.len_utf8();
        }
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sourcemap::SourceMap;

    fn parse_str(s: &str) -> Result<Node, Vec<Diagnostic>> {
        let mut map = SourceMap::default();
        let id = map.add("t.yml", s);
        parse(id, map.get(id))
    }

    #[test]
    fn spans_are_bytes_even_after_multibyte_text() {
        let n = parse_str("a: wéb\nb: x\n").unwrap();
        let b = n.get("b").unwrap();
        assert_eq!(b.loc.span.start, "a: wéb\nb: ".len());
        assert_eq!((b.loc.span.line, b.loc.span.col), (2, 4));
    }

    #[test]
    fn a_block_collection_ends_with_its_last_child() {
        let text = "a:\n  - service: api\n    allow: [quote]   # why\n\n  - {service: b}\nnext: 1\n";
        let root = parse_str(text).unwrap();
        let list = root.get("a").unwrap();
        let first = &list.as_seq().unwrap()[0];
        let allow = first.get("allow").unwrap();
        assert_eq!(&text[allow.loc.span.start..allow.loc.span.end], "[quote]");
        assert_eq!(&text[first.loc.span.start..first.loc.span.end], "service: api\n    allow: [quote]");
        let flow = &list.as_seq().unwrap()[1];
        assert_eq!(&text[flow.loc.span.start..flow.loc.span.end], "{service: b}");
        assert_eq!(&text[list.loc.span.start..list.loc.span.end], "- service: api\n    allow: [quote]   # why\n\n  - {service: b}");
    }

    #[test]
    fn alias_bomb_is_a_diagnostic() {
        let mut s = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            s.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        let err = parse_str(&s).unwrap_err();
        assert_eq!(err[0].code, codes::ALIAS_BUDGET);
    }

    #[test]
    fn deep_nesting_is_a_diagnostic() {
        let s = "[".repeat(10_000) + &"]".repeat(10_000);
        let err = parse_str(&s).unwrap_err();
        assert!(matches!(err[0].code, codes::TOO_DEEP | codes::SYNTAX), "{:?}", err[0]);
    }

    #[test]
    fn duplicate_keys_are_rejected_and_merge_keys_applied() {
        let err = parse_str("a: 1\na: 2\n").unwrap_err();
        assert_eq!(err[0].code, codes::DUPLICATE_KEY);
        assert_eq!(err[0].loc.unwrap().span.line, 2);
        let n = parse_str("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n").unwrap();
        let m = n.get("m").unwrap();
        assert_eq!(m.get("x").unwrap().as_str(), Some("1"));
        assert_eq!(m.get("y").unwrap().as_str(), Some("3"));
    }

    #[test]
    fn quoted_scalars_are_not_null_or_bool() {
        let n = parse_str("a: 'null'\nb: true\nc: ~\nd: \"true\"\n").unwrap();
        assert!(!n.get("a").unwrap().is_null());
        assert_eq!(n.get("b").unwrap().as_bool(), Some(true));
        assert!(n.get("c").unwrap().is_null());
        assert_eq!(n.get("d").unwrap().as_bool(), None);
    }
}
