//! JSON, JSONC and JSON5: read with `jsonc-parser`'s AST, edited in its concrete syntax
//! tree, which keeps comments, trailing commas, quoting and indentation of everything an
//! edit does not replace.
//!
//! The parser recurses, so nesting is measured first by a scan that skips strings and
//! comments ([`too_deep_at`]): 100,000 `[` stop there, not on the stack.

use super::rules::Syntax;
use super::{MAX_DEPTH, Op, V, codes, invalid_at, too_deep};
use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, Loc, SourceFile};
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use jsonc_parser::{CollectOptions, ParseOptions, ast};
use std::collections::HashSet;

/// JSON with comments and trailing commas (what VS Code, Gemini and OpenCode read); JSON5
/// adds unquoted keys, single quotes and its numbers. A missing comma is an error in both.
fn options(syntax: Syntax) -> ParseOptions {
    let json5 = syntax == Syntax::Json5;
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_missing_commas: false,
        allow_loose_object_property_names: json5,
        allow_single_quoted_strings: json5,
        allow_hexadecimal_numbers: json5,
        allow_unary_plus_numbers: json5,
        allow_bare_decimal_point_numbers: json5,
        allow_non_finite_numbers: json5,
        allow_extended_string_escapes: json5,
    }
}

fn what(syntax: Syntax) -> &'static str {
    if syntax == Syntax::Json5 { "JSON5" } else { "JSON" }
}

/// The offset of the first `[` or `{` deeper than [`MAX_DEPTH`], outside strings and
/// comments.
pub(crate) fn too_deep_at(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let (mut i, mut depth) = (0, 0usize);
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Reads a file into a document; a key twice in one object is an error (a runner would
/// read the last one, an editor would change the first).
pub(crate) fn read(file: FileId, src: &SourceFile, syntax: Syntax) -> Result<V, Diagnostic> {
    if let Some(at) = too_deep_at(&src.text) {
        return Err(too_deep(file, src, at));
    }
    let parsed = jsonc_parser::parse_to_ast(&src.text, &CollectOptions::default(), &options(syntax))
        .map_err(|e| invalid_at(file, src, e.range().start, what(syntax), &e.kind().to_string()))?;
    match parsed.value {
        None => Ok(V::Obj(Vec::new())),
        Some(v) => convert(&v, file, src),
    }
}

fn convert(v: &ast::Value<'_>, file: FileId, src: &SourceFile) -> Result<V, Diagnostic> {
    Ok(match v {
        ast::Value::StringLit(s) => V::Str(s.value.to_string()),
        ast::Value::NumberLit(n) => V::Num(n.value.to_string()),
        ast::Value::BooleanLit(b) => V::Bool(b.value),
        ast::Value::NullKeyword(_) => V::Null,
        ast::Value::Array(a) => V::Arr(a.elements.iter().map(|e| convert(e, file, src)).collect::<Result<_, _>>()?),
        ast::Value::Object(o) => {
            let mut seen = HashSet::new();
            let mut entries = Vec::with_capacity(o.properties.len());
            for p in &o.properties {
                let name = match &p.name {
                    ast::ObjectPropName::String(s) => s.value.to_string(),
                    ast::ObjectPropName::Word(w) => w.value.to_string(),
                };
                if !seen.insert(name.clone()) {
                    let span = src.span(p.range.start, p.range.start);
                    return Err(Diagnostic::error(
                        codes::INVALID,
                        format!("`{}` holds the key `{}` twice in one object", src.name, crate::diag::printable(&name)),
                    )
                    .at(Loc { file, span })
                    .help("a runner reads the last one and an editor changes the first; remove one"));
                }
                entries.push((name, convert(&p.value, file, src)?));
            }
            V::Obj(entries)
        }
    })
}

fn input(v: &V) -> CstInputValue {
    match v {
        V::Null => CstInputValue::Null,
        V::Bool(b) => CstInputValue::Bool(*b),
        V::Num(n) => CstInputValue::Number(n.clone()),
        V::Str(s) => CstInputValue::String(s.clone()),
        V::Arr(items) => CstInputValue::Array(items.iter().map(input).collect()),
        V::Obj(entries) => CstInputValue::Object(entries.iter().map(|(k, v)| (k.clone(), input(v))).collect()),
    }
}

/// Applies `ops` to `text` (None: the text cannot be edited so; the caller refuses).
pub(crate) fn edit(text: &str, syntax: Syntax, ops: &[Op]) -> Option<String> {
    let root = CstRootNode::parse(text, &options(syntax)).ok()?;
    let top = root.object_value_or_set();
    'ops: for op in ops {
        let (last, parents) = op.path().split_last()?;
        let mut cur: CstObject = top.clone();
        for k in parents {
            cur = match op {
                Op::Set(..) => cur.object_value_or_create(k)?,
                Op::Remove(_) => match cur.object_value(k) {
                    Some(o) => o,
                    None => continue 'ops,
                },
            };
        }
        match op {
            Op::Set(_, v) => match cur.get(last) {
                Some(prop) => prop.set_value(input(v)),
                None => {
                    cur.append(last, input(v));
                }
            },
            Op::Remove(_) => {
                if let Some(prop) = cur.get(last) {
                    prop.remove();
                }
            }
        }
    }
    let mut out = root.to_string();
    if text.ends_with('\n') && !out.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_foreign_keys_survive_an_edit() {
        let text = "{\n  // mine\n  \"model\": \"x\", /* keep */\n  \"mcpServers\": {\n    \"api\": {\"url\": \"old\", \"extra\": 1},\n    \"other\": {}, // theirs\n  },\n}\n";
        let out = edit(text, Syntax::Json, &[Op::set(&["mcpServers", "api"], V::Obj(vec![("url".into(), V::Str("new".into()))]))]).unwrap();
        assert!(out.contains("// mine") && out.contains("/* keep */") && out.contains("// theirs"), "{out}");
        assert!(out.contains("\"new\"") && !out.contains("extra"), "{out}");
    }

    #[test]
    fn nesting_is_measured_before_parsing() {
        assert_eq!(too_deep_at(&"[".repeat(100_000)), Some(MAX_DEPTH));
        assert_eq!(too_deep_at(&format!("\"{}\" // {}", "[".repeat(100), "{".repeat(100))), None);
    }
}
