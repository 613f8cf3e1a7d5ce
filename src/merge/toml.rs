//! TOML (Codex's `config.toml`), edited with `toml_edit`: comments, order and layout of
//! everything an edit does not replace are kept. A value set from the fragment is the
//! fragment's own item (a `[mcp_servers.<name>]` table stays a table, with its sub-tables);
//! a replaced table keeps its place in the file and the comments above its header.

use super::{MAX_DEPTH, Op, V, invalid_at, too_deep};
use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, SourceFile};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

/// Reads a file into a document (toml_edit refuses duplicate keys and bounds recursion).
pub(crate) fn read(file: FileId, src: &SourceFile) -> Result<V, Diagnostic> {
    let doc: DocumentMut = src
        .text
        .parse()
        .map_err(|e: toml_edit::TomlError| invalid_at(file, src, e.span().map_or(0, |s| s.start), "TOML", e.message().trim()))?;
    item(doc.as_item(), 0).ok_or_else(|| too_deep(file, src, 0))
}

/// The document of an item (None: deeper than [`MAX_DEPTH`]).
fn item(i: &Item, depth: usize) -> Option<V> {
    if depth > MAX_DEPTH {
        return None;
    }
    match i {
        Item::None => Some(V::Null),
        Item::Value(v) => value(v, depth),
        Item::Table(t) => t.iter().map(|(k, i)| Some((k.to_string(), item(i, depth + 1)?))).collect::<Option<_>>().map(V::Obj),
        Item::ArrayOfTables(a) => a.iter().map(|t| item(&Item::Table(t.clone()), depth + 1)).collect::<Option<_>>().map(V::Arr),
    }
}

fn value(v: &Value, depth: usize) -> Option<V> {
    if depth > MAX_DEPTH {
        return None;
    }
    Some(match v {
        Value::String(s) => V::Str(s.value().clone()),
        Value::Integer(i) => V::Num(i.value().to_string()),
        Value::Float(f) => V::Num(f.value().to_string()),
        Value::Boolean(b) => V::Bool(*b.value()),
        Value::Datetime(d) => V::Num(d.value().to_string()),
        Value::Array(a) => V::Arr(a.iter().map(|v| value(v, depth + 1)).collect::<Option<_>>()?),
        Value::InlineTable(t) => V::Obj(t.iter().map(|(k, v)| Some((k.to_string(), value(v, depth + 1)?))).collect::<Option<_>>()?),
    })
}

/// A new TOML value for a document value (None: TOML has no null).
fn to_value(v: &V) -> Option<Value> {
    Some(match v {
        V::Null => return None,
        V::Bool(b) => Value::from(*b),
        V::Str(s) => Value::from(s.as_str()),
        V::Num(n) => match (n.parse::<i64>(), n.parse::<f64>(), n.parse::<toml_edit::Datetime>()) {
            (Ok(i), _, _) => Value::from(i),
            (_, Ok(f), _) => Value::from(f),
            (_, _, Ok(d)) => Value::from(d),
            _ => return None,
        },
        V::Arr(items) => Value::Array(items.iter().map(to_value).collect::<Option<Array>>()?),
        V::Obj(entries) => {
            let mut t = InlineTable::new();
            for (k, v) in entries {
                t.insert(k, to_value(v)?);
            }
            Value::InlineTable(t)
        }
    })
}

fn lookup<'d>(doc: &'d DocumentMut, path: &[String]) -> Option<&'d Item> {
    let mut cur = doc.as_item();
    for k in path {
        cur = cur.as_table_like()?.get(k)?;
    }
    Some(cur)
}

/// Tables placed anew: after the table before them (no position of their own), with a
/// blank line above their header.
fn renew(i: &mut Item) {
    let tables: Vec<&mut Table> = match i {
        Item::Table(t) => vec![t],
        Item::ArrayOfTables(a) => a.iter_mut().collect(),
        _ => Vec::new(),
    };
    for t in tables {
        t.set_position(None);
        let prefix = t.decor().prefix().and_then(|p| p.as_str()).unwrap_or("").to_string();
        if !prefix.starts_with('\n') {
            t.decor_mut().set_prefix(format!("\n{prefix}"));
        }
        for (_, child) in t.iter_mut() {
            renew(child);
        }
    }
}

/// The item at `path` under `item`; missing tables on the way are created (implicit, so
/// no header is written for them) when `create`.
fn navigate<'a>(item: &'a mut Item, path: &[String], create: bool) -> Option<&'a mut Item> {
    let Some((k, rest)) = path.split_first() else { return Some(item) };
    let t = item.as_table_like_mut()?;
    if t.get(k).is_none() {
        if !create {
            return None;
        }
        let mut fresh = Table::new();
        fresh.set_implicit(true);
        t.insert(k, Item::Table(fresh));
    }
    navigate(t.get_mut(k)?, rest, create)
}

/// Applies `ops` to `target` (None: it cannot be edited so; the caller refuses).
pub(crate) fn edit(target: &str, fragment: &str, ops: &[Op]) -> Option<String> {
    let mut doc: DocumentMut = target.parse().ok()?;
    let frag: DocumentMut = fragment.parse().ok()?;
    for op in ops {
        let (last, parents) = op.path().split_last()?;
        let Some(cur) = navigate(doc.as_item_mut(), parents, matches!(op, Op::Set(..))) else { continue };
        // A standard table takes table items; an inline or dotted table holds values only.
        let standard = matches!(&*cur, Item::Table(t) if !t.is_dotted());
        let parent = cur.as_table_like_mut()?;
        let Op::Set(path, v) = op else {
            parent.remove(last);
            continue;
        };
        // The fragment's own item when it holds exactly this value (it keeps its layout).
        let own = lookup(&frag, path).filter(|i| item(i, 0).as_ref() == Some(v)).cloned();
        let mut new = match own {
            Some(i) => i,
            None => Item::Value(to_value(v)?),
        };
        renew(&mut new);
        if let (Item::Table(n), Some(Item::Table(old))) = (&mut new, parent.get(last)) {
            n.set_position(old.position());
            if let Some(prefix) = old.decor().prefix() {
                n.decor_mut().set_prefix(prefix.clone());
            }
        }
        if !standard {
            new = Item::Value(new.into_value().ok()?);
        }
        parent.insert(last, new);
    }
    Some(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_table_keeps_its_place_and_comments_elsewhere_survive() {
        let target = "# my config\nmodel = \"o3\" # pinned\n\n# clawc's\n[mcp_servers.api]\nurl = \"old\"\nenabled_tools = [\"a\", \"b\", \"c\"]\n\n[mcp_servers.api.env]\nX = \"1\"\n\n[profile]\nx = 1 # keep\n";
        let fragment = "[mcp_servers.api]\nurl = \"new\"\nenabled_tools = [\"a\"]\n";
        let mut sources = crate::sourcemap::SourceMap::default();
        let id = sources.add("f", fragment);
        let v = read(id, sources.get(id)).unwrap().get("mcp_servers").unwrap().get("api").unwrap().clone();
        let out = edit(target, fragment, &[Op::set(&["mcp_servers", "api"], v)]).unwrap();
        assert_eq!(
            out,
            "# my config\nmodel = \"o3\" # pinned\n\n# clawc's\n[mcp_servers.api]\nurl = \"new\"\nenabled_tools = [\"a\"]\n\n[profile]\nx = 1 # keep\n"
        );
    }
}
