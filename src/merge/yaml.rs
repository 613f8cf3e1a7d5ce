//! YAML (Hermes, Goose), edited line by line: no maintained Rust crate edits YAML keeping
//! comments (`yaml-edit` is young and error-recovering, a poor fit for hostile input), so
//! the file is read with clawc's own bounded reader (`crate::yaml`: spans, depth and alias
//! budgets, duplicate keys) and an edit replaces the lines of one entry of a block mapping,
//! or appends an entry after its mapping's last, written in block style at that mapping's
//! indentation. Everything else, comments included, is left byte for byte.
//!
//! A layout line editing cannot handle (an owned parent in flow style such as
//! `mcp_servers: {}`, a top-level flow mapping, keys brought in by `<<`) is rewritten: the
//! parent entry in block style, or as a last resort the whole document; then the comments
//! in what was rewritten are lost, and the caller warns with their number.

use super::{Op, V, codes, too_deep};
use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, SourceFile, SourceMap};
use crate::yaml::{Kind, Node};
use std::collections::HashSet;

/// Reads a file into a document (YAML 1.2 core schema for plain scalars).
pub(crate) fn read(file: FileId, src: &SourceFile) -> Result<V, Diagnostic> {
    let node = crate::yaml::parse(file, src).map_err(|ds| {
        let Some(d) = ds.into_iter().next() else {
            return Diagnostic::error(codes::INVALID, format!("`{}` is not valid YAML", src.name));
        };
        let at = d.loc.map_or(0, |l| l.span.start);
        // saphyr's own recursion limit can come first.
        if d.code == crate::yaml::codes::TOO_DEEP || d.message.contains("recursion limit") {
            return too_deep(file, src, at);
        }
        let msg = d.message.strip_prefix("invalid YAML: ").unwrap_or(&d.message).to_string();
        super::invalid_at(file, src, at, "YAML", &msg)
    })?;
    // A document of comments only is an empty mapping.
    Ok(if node.is_null() { V::Obj(Vec::new()) } else { to_v(&node) })
}

fn to_v(n: &Node) -> V {
    match &n.kind {
        Kind::Scalar { text, plain: false } => V::Str(text.clone()),
        Kind::Scalar { text, plain: true } => plain(text),
        Kind::Seq(items) => V::Arr(items.iter().map(to_v).collect()),
        Kind::Map(entries) => V::Obj(entries.iter().map(|(k, v)| (key_text(k), to_v(v))).collect()),
    }
}

fn key_text(k: &Node) -> String {
    match &k.kind {
        Kind::Scalar { text, .. } => text.clone(),
        _ => format!("<{} key at line {}>", k.kind_name(), k.loc.span.line),
    }
}

/// A plain scalar under the YAML 1.2 core schema.
fn plain(text: &str) -> V {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => V::Null,
        "true" | "True" | "TRUE" => V::Bool(true),
        "false" | "False" | "FALSE" => V::Bool(false),
        t if is_number(t) => V::Num(t.to_string()),
        // A plain scalar a YAML 1.1 reader (Hermes is Python) may type (`yes`, `0777`,
        // `12:30`, a date) is kept as written, so writing it again changes nothing.
        t if scalar(t).starts_with('"') && !t.contains(['\n', '\r']) && !t.contains(": ") && !t.contains(" #") && !t.ends_with(':') => {
            V::Num(t.to_string())
        }
        t => V::Str(t.to_string()),
    }
}

fn is_number(t: &str) -> bool {
    let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    if let Some(h) = t.strip_prefix("0x") {
        return digits(h, 16);
    }
    if let Some(o) = t.strip_prefix("0o") {
        return digits(o, 8);
    }
    let u = t.strip_prefix(['-', '+']).unwrap_or(t);
    if matches!(u, ".inf" | ".Inf" | ".INF") || matches!(t, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let (mantissa, exp) = match u.find(['e', 'E']) {
        Some(i) => (&u[..i], Some(&u[i + 1..])),
        None => (u, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((a, b)) => (digits(a, 10) || a.is_empty()) && (digits(b, 10) || b.is_empty()) && !(a.is_empty() && b.is_empty()),
        None => digits(mantissa, 10),
    };
    mantissa_ok && exp.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e), 10))
}

/// A string written plain when nothing could read it as another type (YAML 1.1 readers
/// included: `yes`, `on`, …), else double-quoted with JSON escapes (valid YAML).
fn scalar(s: &str) -> String {
    const WORDS: [&str; 11] = ["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "nan"];
    let safe = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '/')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "_./@+-: ".contains(c))
        && !s.contains(": ")
        && !s.ends_with(':')
        && !s.ends_with(' ')
        && !s.contains("  ")
        && !WORDS.contains(&s.to_ascii_lowercase().as_str());
    if safe { s.to_string() } else { serde_json::to_string(s).unwrap_or_default() }
}

fn flow(v: &V) -> String {
    match v {
        V::Null => "null".to_string(),
        V::Bool(b) => b.to_string(),
        V::Num(n) => n.clone(),
        V::Str(s) => serde_json::to_string(s).unwrap_or_default(),
        V::Arr(items) => format!("[{}]", items.iter().map(flow).collect::<Vec<_>>().join(", ")),
        V::Obj(entries) => {
            let e: Vec<String> =
                entries.iter().map(|(k, v)| format!("{}: {}", serde_json::to_string(k).unwrap_or_default(), flow(v))).collect();
            format!("{{{}}}", e.join(", "))
        }
    }
}

/// `key: value` in block style at `indent`, with a trailing newline.
fn entry(out: &mut String, key: &str, v: &V, indent: usize) {
    let pad = " ".repeat(indent);
    match v {
        V::Obj(entries) if !entries.is_empty() => {
            out.push_str(&format!("{pad}{}:\n", scalar(key)));
            for (k, v) in entries {
                entry(out, k, v, indent + 2);
            }
        }
        V::Arr(items) if !items.is_empty() => {
            out.push_str(&format!("{pad}{}:\n", scalar(key)));
            for i in items {
                item(out, i, indent + 2);
            }
        }
        V::Str(s) => out.push_str(&format!("{pad}{}: {}\n", scalar(key), scalar(s))),
        other => out.push_str(&format!("{pad}{}: {}\n", scalar(key), flow(other))),
    }
}

fn item(out: &mut String, v: &V, indent: usize) {
    let pad = " ".repeat(indent);
    match v {
        V::Obj(entries) if !entries.is_empty() => {
            let mut body = String::new();
            for (k, v) in entries {
                entry(&mut body, k, v, indent + 2);
            }
            out.push_str(&pad);
            out.push_str("- ");
            out.push_str(&body[indent + 2..]);
        }
        V::Str(s) => out.push_str(&format!("{pad}- {}\n", scalar(s))),
        other => out.push_str(&format!("{pad}- {}\n", flow(other))),
    }
}

/// The whole document in block style.
fn document(v: &V) -> String {
    match v {
        V::Obj(entries) if !entries.is_empty() => {
            let mut out = String::new();
            for (k, v) in entries {
                entry(&mut out, k, v, 0);
            }
            out
        }
        other => format!("{}\n", flow(other)),
    }
}

/// About how many comments `text` holds (a `#` at a line's start or after a blank,
/// outside quotes on its line).
pub(crate) fn comments(text: &str) -> usize {
    let mut n = 0;
    for line in text.lines() {
        let (mut quote, mut prev_blank) = (None, true);
        for c in line.chars() {
            match (quote, c) {
                (None, '#') if prev_blank => {
                    n += 1;
                    break;
                }
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                _ => {}
            }
            prev_blank = c == ' ' || c == '\t';
        }
    }
    n
}

/// The lines of a text.
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.bytes().enumerate().filter(|(i, b)| *b == b'\n' && i + 1 < text.len()).map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    fn of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset) - 1
    }

    fn start(&self, line: usize) -> usize {
        self.starts.get(line).copied().unwrap_or(self.text.len())
    }

    fn line(&self, i: usize) -> &'a str {
        let end = self.start(i + 1);
        self.text[self.start(i)..end].trim_end_matches(['\n', '\r'])
    }

    /// The indentation of the key at `offset` when only spaces precede it on its line.
    fn key_indent(&self, offset: usize) -> Option<usize> {
        let start = self.start(self.of(offset));
        let prefix = self.text.get(start..offset)?;
        prefix.bytes().all(|b| b == b' ').then_some(prefix.len())
    }

    /// The byte range of the entry whose key starts at `offset`, indented `indent`: its
    /// key line and every following line indented deeper (or a `- ` item at its level),
    /// less the blank lines and shallower comments that end it (they belong to what follows).
    fn region(&self, offset: usize, indent: usize) -> (usize, usize) {
        let first = self.of(offset);
        let n = self.starts.len();
        let mut j = first + 1;
        while j < n {
            let l = self.line(j);
            let ind = l.len() - l.trim_start_matches(' ').len();
            let rest = &l[ind..];
            if rest.is_empty() || rest.starts_with('#') || ind > indent || (ind == indent && (rest == "-" || rest.starts_with("- "))) {
                j += 1;
            } else {
                break;
            }
        }
        while j > first + 1 {
            let l = self.line(j - 1);
            let ind = l.len() - l.trim_start_matches(' ').len();
            let rest = &l[ind..];
            if rest.is_empty() || (rest.starts_with('#') && ind <= indent) {
                j -= 1;
            } else {
                break;
            }
        }
        (self.start(first), self.start(j))
    }
}

/// The indentation of a block mapping's keys (None: not a block mapping this editor can
/// change: flow style, keys sharing a line, keys from `<<`).
fn block_indent(m: &Node, lines: &Lines<'_>) -> Option<usize> {
    let Kind::Map(entries) = &m.kind else { return None };
    let mut indent = None;
    let mut seen = HashSet::new();
    for (k, _) in entries {
        let i = lines.key_indent(k.loc.span.start)?;
        if *indent.get_or_insert(i) != i || !seen.insert(lines.of(k.loc.span.start)) || k.loc.span.start < m.loc.span.start {
            return None;
        }
    }
    indent
}

fn get<'n>(m: &'n Node, key: &str) -> Option<&'n (Node, Node)> {
    m.as_map()?.iter().find(|(k, _)| key_text(k) == key)
}

fn expected_at<'v>(doc: &'v V, path: &[String]) -> Option<&'v V> {
    path.iter().try_fold(doc, |v, k| v.get(k))
}

enum Action {
    Replace { start: usize, end: usize, text: String, restructure: bool },
    Insert { at: usize, text: String },
}

impl Action {
    fn start(&self) -> usize {
        match self {
            Action::Replace { start, .. } => *start,
            Action::Insert { at, .. } => *at,
        }
    }
}

/// Line edits for `ops` (None: the layout needs a rewrite). Returns the text and the
/// number of comments in entries rewritten for their layout (not those of replaced ones).
fn splice(text: &str, ops: &[Op], expected: &V) -> Option<(String, usize)> {
    let mut sources = SourceMap::default();
    let id = sources.add("target", text);
    let root = crate::yaml::parse(id, sources.get(id)).ok()?;
    let lines = Lines::new(text);
    let root = match &root.kind {
        Kind::Map(e) if !e.is_empty() => Some(&root),
        _ if root.is_null() => None,
        _ => return None,
    };
    let mut actions = Vec::new();
    let mut done: HashSet<(usize, String)> = HashSet::new();
    for op in ops {
        let path = op.path();
        let mut cur = root;
        for (i, k) in path.iter().enumerate() {
            let value = expected_at(expected, &path[..=i]);
            let Some(m) = cur else {
                // An empty document: the entries go at its end.
                if let Some(v) = value.filter(|_| done.insert((usize::MAX, k.clone()))) {
                    let mut t = String::new();
                    entry(&mut t, k, v, 0);
                    actions.push(Action::Insert { at: text.len(), text: t });
                }
                break;
            };
            let indent = block_indent(m, &lines)?;
            let Some((kn, vn)) = get(m, k) else {
                if let Some(v) = value.filter(|_| done.insert((m.loc.span.start, k.clone()))) {
                    let last = m.as_map()?.iter().map(|(k, _)| k.loc.span.start).max()?;
                    let mut t = String::new();
                    entry(&mut t, k, v, indent);
                    actions.push(Action::Insert { at: lines.region(last, indent).1, text: t });
                }
                break;
            };
            let last = i + 1 == path.len();
            let nested = vn.as_map().is_some_and(|e| !e.is_empty())
                && block_indent(vn, &lines).is_some_and(|c| c > indent)
                && vn.as_map()?.iter().all(|(k, _)| lines.of(k.loc.span.start) > lines.of(kn.loc.span.start));
            if !last && nested {
                cur = Some(vn);
                continue;
            }
            if done.insert((kn.loc.span.start, String::new())) {
                let (start, end) = lines.region(kn.loc.span.start, indent);
                let mut t = String::new();
                if let Some(v) = value {
                    entry(&mut t, k, v, indent);
                }
                actions.push(Action::Replace { start, end, text: t, restructure: !last });
            }
            break;
        }
    }
    // Apply from the end; inserts at one place keep their order; no two edits may overlap.
    let mut order: Vec<(usize, &Action)> = actions.iter().enumerate().collect();
    order.sort_by_key(|(n, a)| (a.start(), *n));
    for w in order.windows(2) {
        if let Action::Replace { end, .. } = w[0].1
            && w[1].1.start() < *end
        {
            return None;
        }
    }
    let mut out = text.to_string();
    let mut lost = 0;
    for (_, a) in order.iter().rev() {
        match a {
            Action::Replace { start, end, text: t, restructure } => {
                if *restructure {
                    lost += comments(&text[*start..*end]);
                }
                out.replace_range(*start..*end, t);
            }
            Action::Insert { at, text: t } => {
                let sep = if *at > 0 && !text[..*at].ends_with('\n') { "\n" } else { "" };
                out.insert_str(*at, &format!("{sep}{t}"));
            }
        }
    }
    Some((out, lost))
}

/// What an edit did.
pub(crate) enum Edited {
    /// Lines replaced and appended; every comment outside replaced entries kept.
    InPlace(String),
    /// Parts (or all) of the file written again in block style, losing `lost` comments.
    Rewritten { text: String, lost: usize, why: String },
}

fn reads_as(text: &str, expected: &V) -> bool {
    let mut sources = SourceMap::default();
    let id = sources.add("edited", text);
    read(id, sources.get(id)).is_ok_and(|v| v == *expected)
}

/// Applies `ops` (whose result is `expected`) to `text`.
pub(crate) fn edit(text: &str, ops: &[Op], expected: &V) -> Edited {
    match splice(text, ops, expected) {
        Some((out, 0)) if reads_as(&out, expected) => Edited::InPlace(out),
        Some((out, lost)) if reads_as(&out, expected) => {
            Edited::Rewritten { text: out, lost, why: "an owned entry in flow style was written again in block style".to_string() }
        }
        _ => Edited::Rewritten {
            text: document(expected),
            lost: comments(text),
            why: "its layout (flow style, `<<` merge keys or anchors around what changes) cannot be edited line by line, so the whole file was written again"
                .to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> V {
        let mut sources = SourceMap::default();
        let id = sources.add("t", text);
        read(id, sources.get(id)).unwrap()
    }

    fn merged(text: &str, ops: &[Op]) -> V {
        let mut v = doc(text);
        for op in ops {
            super::super::apply(&mut v, op);
        }
        v
    }

    #[test]
    fn an_entry_is_replaced_in_place_and_comments_elsewhere_survive() {
        let text = "# top\nmodel: x # mine\nmcp_servers:\n  # theirs\n  other:\n    url: http://o\n  api:\n    url: http://old\n    tools: [a, b, c]\n    # inside\n# after\nmemory: on\n";
        let api = doc("url: http://new\ntools: [a]\n");
        let ops = [Op::set(&["mcp_servers", "api"], api), Op::set(&["mcp_servers", "new"], doc("url: http://n\n"))];
        let expected = merged(text, &ops);
        let Edited::InPlace(out) = edit(text, &ops, &expected) else { panic!("rewritten") };
        assert_eq!(
            out,
            "# top\nmodel: x # mine\nmcp_servers:\n  # theirs\n  other:\n    url: http://o\n  api:\n    url: http://new\n    tools:\n      - a\n  new:\n    url: http://n\n# after\nmemory: on\n"
        );
    }

    #[test]
    fn a_flow_parent_is_rewritten_in_block_style() {
        let text = "# keep\nmcp_servers: {}\nx: 1\n";
        let ops = [Op::set(&["mcp_servers", "api"], doc("url: u\n"))];
        let expected = merged(text, &ops);
        let Edited::InPlace(out) = edit(text, &ops, &expected) else { panic!("no comment was in the way") };
        assert_eq!(out, "# keep\nmcp_servers:\n  api:\n    url: u\nx: 1\n");
    }

    #[test]
    fn empty_and_missing_parents() {
        for (text, want) in [("", "a:\n  b: 1\n"), ("# c\n", "# c\na:\n  b: 1\n"), ("x: 1", "x: 1\na:\n  b: 1\n")] {
            let ops = [Op::set(&["a", "b"], V::Num("1".into()))];
            let expected = merged(text, &ops);
            let Edited::InPlace(out) = edit(text, &ops, &expected) else { panic!("{text:?}") };
            assert_eq!(out, want);
        }
    }

    #[test]
    fn strings_that_read_as_other_types_are_quoted() {
        for s in ["yes", "On", "1.5", "0x1f", "", "a: b", "a:", "x #y", "-a", "null", "é"] {
            assert!(scalar(s).starts_with('"'), "{s}");
            assert_eq!(doc(&format!("k: {}\n", scalar(s))).get("k"), Some(&V::Str(s.to_string())));
        }
        assert_eq!(scalar("http://x.y_z-1"), "http://x.y_z-1");
        assert_eq!(comments("a: '#x' # c\n# d\nb: c#d\n"), 2);
        // What a YAML 1.1 reader types is written back as it was.
        let v = doc("a: yes\nb: 0777\nc: 2001-12-14\n");
        assert_eq!(v.get("a"), Some(&V::Num("yes".into())));
        assert_eq!(document(&v), "a: yes\nb: 0777\nc: 2001-12-14\n");
    }
}
