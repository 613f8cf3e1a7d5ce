//! `clawc merge FRAGMENT TARGET`: merges a runner file clawc wrote (a *fragment*, under
//! `<out>/runners/<agent-id>/<role>/<path>`) into a user's own file of that runner,
//! changing only what clawc owns there ([`rules::RULES`], rendered as `docs/merge.md`).
//!
//! The merge is computed on documents ([`V`]): [`plan`] turns the target, the fragment and
//! the file's rule into edit operations ([`Op`]) and the document the result must be. Each
//! format then applies the operations to the target's *text*, keeping what it does not
//! touch (`json.rs`: jsonc-parser's CST; `toml.rs`: toml_edit; `yaml.rs`: line splicing),
//! and the edited text is read back and compared with that document: an editor that got
//! it wrong cannot write a file that means something else.
//!
//! Both files are untrusted (in CI they come from a pull request): read only when regular
//! files (never through a symlink, never a FIFO) of at most [`crate::disk::MAX_INPUT_BYTES`],
//! nested at most [`MAX_DEPTH`] levels, and never quoted in diagnostics (a snippet of a
//! config file would print its tokens).

pub(crate) mod json;
pub mod rules;
pub(crate) mod toml;
pub(crate) mod yaml;

use crate::diag::Diagnostic;
use crate::disk::{self, Contents};
use crate::runner::{RUNNERS, Runner};
use crate::sourcemap::{FileId, Loc, SourceMap};
use rules::{FileRule, Item, Own, RULES, Syntax};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

pub(crate) use crate::diag::catalogue::merge as codes;

/// Deepest nesting read from either file (runner configs are shallow; this stops hostile
/// input before anything recurses).
pub(crate) const MAX_DEPTH: usize = 64;

/// A document, whatever its format: objects keep their order; numbers (and TOML dates)
/// keep their text.
#[derive(Clone, Debug)]
pub(crate) enum V {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<V>),
    Obj(Vec<(String, V)>),
}

impl PartialEq for V {
    /// Objects compare as maps (the order of keys is layout, not meaning).
    fn eq(&self, other: &V) -> bool {
        match (self, other) {
            (V::Null, V::Null) => true,
            (V::Bool(a), V::Bool(b)) => a == b,
            (V::Num(a), V::Num(b)) => a == b || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y),
            (V::Str(a), V::Str(b)) => a == b,
            (V::Arr(a), V::Arr(b)) => a == b,
            // Keys are unique (every reader refuses a key twice), so equal lengths and every
            // entry of `a` found equal in `b` is equality; `b` is indexed once (linear).
            (V::Obj(a), V::Obj(b)) => {
                a.len() == b.len() && {
                    let b = Index::of(other);
                    a.iter().all(|(k, v)| b.get(k) == Some(v))
                }
            }
            _ => false,
        }
    }
}

impl V {
    pub(crate) fn get(&self, key: &str) -> Option<&V> {
        match self {
            V::Obj(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn kind_name(&self) -> &'static str {
        match self {
            V::Null => "null",
            V::Bool(_) => "a boolean",
            V::Num(_) => "a number",
            V::Str(_) => "a string",
            V::Arr(_) => "a list",
            V::Obj(_) => "an object",
        }
    }

    fn entries_mut(&mut self) -> Option<&mut Vec<(String, V)>> {
        match self {
            V::Obj(e) => Some(e),
            _ => None,
        }
    }
}

/// The entries of an object by key (empty for anything else): lookups in constant time,
/// since the objects of a hostile file can hold [`MAX_ENTRIES`] keys.
pub(crate) struct Index<'v>(std::collections::HashMap<&'v str, &'v V>);

impl<'v> Index<'v> {
    pub(crate) fn of(v: &'v V) -> Self {
        match v {
            V::Obj(e) => Index(e.iter().map(|(k, v)| (k.as_str(), v)).collect()),
            _ => Index(std::collections::HashMap::new()),
        }
    }

    fn of_opt(v: Option<&'v V>) -> Self {
        v.map_or_else(|| Index(std::collections::HashMap::new()), Index::of)
    }

    pub(crate) fn get(&self, k: &str) -> Option<&'v V> {
        self.0.get(k).copied()
    }
}

/// Most entries of one object or items of one list in either file, and most edits of
/// one merge: runner configs hold tens; the bounds keep every step of a hostile merge
/// (the editors look keys up linearly) far from quadratic blow-ups.
pub(crate) const MAX_ENTRIES: usize = 10_000;
pub(crate) const MAX_EDITS: usize = 1_000;

/// The first object or list of `v` over [`MAX_ENTRIES`], by path.
fn oversized(v: &V, path: &mut Vec<String>) -> Option<(String, usize)> {
    let n = match v {
        V::Obj(e) => e.len(),
        V::Arr(a) => a.len(),
        _ => return None,
    };
    if n > MAX_ENTRIES {
        return Some((dotted(path), n));
    }
    match v {
        V::Obj(e) => e.iter().find_map(|(k, v)| {
            path.push(k.clone());
            let found = oversized(v, path);
            path.pop();
            found
        }),
        V::Arr(a) => a.iter().find_map(|v| oversized(v, path)),
        _ => None,
    }
}

/// One edit of the target, by path of object keys from the root.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Op {
    /// Replace the value at the path whole (or add it at the end of its object), creating
    /// the objects on the way.
    Set(Vec<String>, V),
    /// Remove the key at the path.
    Remove(Vec<String>),
}

impl Op {
    /// `Set` at a path written as string slices.
    pub(crate) fn set(path: &[&str], v: V) -> Op {
        Op::Set(owned_path(path), v)
    }

    pub(crate) fn path(&self) -> &[String] {
        match self {
            Op::Set(p, _) | Op::Remove(p) => p,
        }
    }
}

/// `a.b.c` (for messages: keys come from untrusted files, so they are made printable).
pub(crate) fn dotted(path: &[impl AsRef<str>]) -> String {
    let s: Vec<&str> = path.iter().map(AsRef::as_ref).collect();
    if s.is_empty() { "the top level".to_string() } else { crate::diag::printable(&s.join(".")) }
}

/// Applies `op` to a document (the model of what an editor must produce).
pub(crate) fn apply(doc: &mut V, op: &Op) {
    let (path, value) = match op {
        Op::Set(p, v) => (p, Some(v)),
        Op::Remove(p) => (p, None),
    };
    let Some((last, parents)) = path.split_last() else {
        if let Some(v) = value {
            *doc = v.clone();
        }
        return;
    };
    let mut cur = doc;
    for k in parents {
        let Some(entries) = cur.entries_mut() else { return };
        let i = match entries.iter().position(|(ek, _)| ek == k) {
            Some(i) => i,
            None if value.is_some() => {
                entries.push((k.clone(), V::Obj(Vec::new())));
                entries.len() - 1
            }
            None => return,
        };
        cur = &mut entries[i].1;
    }
    let Some(entries) = cur.entries_mut() else { return };
    let at = entries.iter().position(|(k, _)| k == last);
    match (at, value) {
        (Some(i), Some(v)) => entries[i].1 = v.clone(),
        (None, Some(v)) => entries.push((last.clone(), v.clone())),
        (Some(i), None) => {
            entries.remove(i);
        }
        (None, None) => {}
    }
}

/// Which file is which, for messages.
#[derive(Clone, Copy)]
struct Side<'a> {
    file: FileId,
    name: &'a str,
}

fn conflict(side: Side<'_>, path: &[&str], found: &V, want: &str) -> Diagnostic {
    Diagnostic::error(codes::TYPE_CONFLICT, format!("`{}` in `{}` is {}, not {want}", dotted(path), side.name, found.kind_name()))
        .in_file(side.file)
        .help("clawc merges into an object or list of the runner's documented shape; fix or remove this value")
}

/// The value at `path` (None when absent); an error when something on the way, or the
/// value itself, is not of the wanted kind.
fn at<'v>(v: &'v V, path: &[&str], side: Side<'_>, want_obj: Option<bool>) -> Result<Option<&'v V>, Diagnostic> {
    let mut cur = v;
    for (i, k) in path.iter().enumerate() {
        match cur {
            V::Obj(_) => match cur.get(k) {
                Some(next) => cur = next,
                None => return Ok(None),
            },
            other => return Err(conflict(side, &path[..i], other, "an object")),
        }
    }
    match (want_obj, cur) {
        (Some(true), V::Obj(_)) | (Some(false), V::Arr(_)) | (None, _) => Ok(Some(cur)),
        (Some(true), other) => Err(conflict(side, path, other, "an object")),
        (Some(false), other) => Err(conflict(side, path, other, "a list")),
    }
}

fn entries(v: Option<&V>) -> &[(String, V)] {
    match v {
        Some(V::Obj(e)) => e,
        _ => &[],
    }
}

fn items(v: Option<&V>) -> &[V] {
    match v {
        Some(V::Arr(e)) => e,
        _ => &[],
    }
}

fn owned_path(p: &[&str]) -> Vec<String> {
    p.iter().map(|s| (*s).to_string()).collect()
}

fn with(path: &[&str], key: &str) -> Vec<String> {
    let mut p = owned_path(path);
    p.push(key.to_string());
    p
}

/// The server a fragment list item names.
fn server_of(item: &V, kind: Item) -> Option<&str> {
    let V::Str(s) = item else { return None };
    match kind {
        Item::ServerName => Some(s),
        Item::ClaudePermission => {
            let rest = s.strip_prefix("mcp__")?;
            Some(rest.split("__").next().unwrap_or(rest)).filter(|s| !s.is_empty())
        }
    }
}

/// Whether a target list item belongs to one of `servers`.
fn owned_item(item: &V, kind: Item, servers: &BTreeSet<&str>) -> bool {
    let V::Str(s) = item else { return false };
    match kind {
        Item::ServerName => servers.contains(s.as_str()),
        Item::ClaudePermission => s
            .strip_prefix("mcp__")
            .is_some_and(|rest| servers.iter().any(|srv| rest == *srv || rest.strip_prefix(srv).is_some_and(|t| t.starts_with("__")))),
    }
}

/// What merging `fragment` into `target` under `rule` does: the edits, the document they
/// must give, and warnings.
pub(crate) struct Planned {
    pub(crate) ops: Vec<Op>,
    pub(crate) expected: V,
    pub(crate) warnings: Vec<Diagnostic>,
}

fn plan(rule: &FileRule, target: &V, fragment: &V, t: Side<'_>, f: Side<'_>) -> Result<Planned, Vec<Diagnostic>> {
    let mut ops = Vec::new();
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for (v, side) in [(target, t), (fragment, f)] {
        if !matches!(v, V::Obj(_)) {
            errors.push(conflict(side, &[], v, "an object"));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // The servers the fragment's server lists name (in any list of the file).
    let mut servers: BTreeSet<&str> = BTreeSet::new();
    for own in rule.owns {
        if let Own::ServerItems(path, kind) = own {
            match at(fragment, path, f, Some(false)) {
                Ok(list) => servers.extend(items(list).iter().filter_map(|i| server_of(i, *kind))),
                Err(e) => errors.push(e),
            }
        }
    }
    for own in rule.owns {
        let r = match *own {
            Own::Entries(path) => entries_op(path, target, fragment, t, f, &mut ops),
            Own::ServerItems(path, kind) => list_op(path, target, fragment, t, f, &mut ops, |i| owned_item(i, kind, &servers)),
            Own::Union(path) => list_op(path, target, fragment, t, f, &mut ops, |_| false),
            Own::Scalar(path) => scalar_op(path, target, fragment, t, f, &mut ops),
            Own::ServerKeys { map, servers } => server_keys_op(map, servers, target, fragment, t, f, &mut ops),
        };
        if let Err(e) = r {
            errors.push(e);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let owned: Vec<&[&str]> = rule.owns.iter().map(|o| o.path()).collect();
    fill(&mut Vec::new(), fragment, Some(target), &owned, t, &mut ops, &mut warnings);
    let mut expected = target.clone();
    for op in &ops {
        apply(&mut expected, op);
    }
    Ok(Planned { ops, expected, warnings })
}

fn entries_op(path: &[&str], target: &V, fragment: &V, t: Side<'_>, f: Side<'_>, ops: &mut Vec<Op>) -> Result<(), Diagnostic> {
    let Some(fo) = at(fragment, path, f, Some(true))? else { return Ok(()) };
    let to = Index::of_opt(at(target, path, t, Some(true))?);
    for (k, fv) in entries(Some(fo)) {
        if to.get(k) != Some(fv) {
            ops.push(Op::Set(with(path, k), fv.clone()));
        }
    }
    Ok(())
}

fn list_op(
    path: &[&str],
    target: &V,
    fragment: &V,
    t: Side<'_>,
    f: Side<'_>,
    ops: &mut Vec<Op>,
    owned: impl Fn(&V) -> bool,
) -> Result<(), Diagnostic> {
    let fl = at(fragment, path, f, Some(false))?;
    let tl = at(target, path, t, Some(false))?;
    if fl.is_none() && tl.is_none() {
        return Ok(());
    }
    // The fragment's items go last in the fragment's order (and the target's copies of
    // them are dropped), so a second merge finds the list as the first left it.
    let ours = items(fl);
    let mut new: Vec<V> = items(tl).iter().filter(|i| !owned(i) && !ours.contains(i)).cloned().collect();
    for i in ours {
        if !new.contains(i) {
            new.push(i.clone());
        }
    }
    let new = V::Arr(new);
    if tl != Some(&new) {
        ops.push(Op::set(path, new));
    }
    Ok(())
}

fn scalar_op(path: &[&str], target: &V, fragment: &V, t: Side<'_>, f: Side<'_>, ops: &mut Vec<Op>) -> Result<(), Diagnostic> {
    let Some(fv) = at(fragment, path, f, None)? else { return Ok(()) };
    if at(target, path, t, None)? != Some(fv) {
        ops.push(Op::set(path, fv.clone()));
    }
    Ok(())
}

fn server_keys_op(
    map: &[&str],
    servers: &[&str],
    target: &V,
    fragment: &V,
    t: Side<'_>,
    f: Side<'_>,
    ops: &mut Vec<Op>,
) -> Result<(), Diagnostic> {
    let ours: BTreeSet<&str> = entries(at(fragment, servers, f, Some(true))?).iter().map(|(k, _)| k.as_str()).collect();
    let theirs: BTreeSet<&str> = entries(at(target, servers, t, Some(true))?).iter().map(|(k, _)| k.as_str()).collect();
    let fm = at(fragment, map, f, Some(true))?;
    let tm = at(target, map, t, Some(true))?;
    let (fi, ti) = (Index::of_opt(fm), Index::of_opt(tm));
    // The server a key belongs to: the longest server name it starts with (then `_`).
    let owner = |key: &str| {
        ours.iter()
            .chain(theirs.iter())
            .filter(|s| key.strip_prefix(**s).is_some_and(|rest| rest.starts_with('_')))
            .max_by_key(|s| s.len())
            .copied()
    };
    for (k, _) in entries(tm) {
        if owner(k).is_some_and(|s| ours.contains(s)) && fi.get(k).is_none() {
            ops.push(Op::Remove(with(map, k)));
        }
    }
    for (k, fv) in entries(fm) {
        if ti.get(k) != Some(fv) {
            ops.push(Op::Set(with(map, k), fv.clone()));
        }
    }
    Ok(())
}

/// Keys of the fragment that no rule owns: added where the target lacks them, objects
/// merged key by key, the target's value kept (with a warning) where it differs.
fn fill(
    path: &mut Vec<String>,
    f: &V,
    t: Option<&V>,
    owned: &[&[&str]],
    side: Side<'_>,
    ops: &mut Vec<Op>,
    warnings: &mut Vec<Diagnostic>,
) {
    let ti = Index::of_opt(t);
    for (k, fv) in entries(Some(f)) {
        path.push(k.clone());
        let covered = owned.iter().any(|o| path.len() >= o.len() && path.iter().zip(o.iter()).all(|(a, b)| a == b));
        let above = owned.iter().any(|o| o.len() > path.len() && path.iter().zip(o.iter()).all(|(a, b)| a == b));
        let tv = ti.get(k);
        if covered {
        } else if above {
            if matches!(fv, V::Obj(_)) && matches!(tv, None | Some(V::Obj(_))) {
                fill(path, fv, tv, owned, side, ops, warnings);
            }
        } else {
            match tv {
                None => ops.push(Op::Set(path.clone(), fv.clone())),
                Some(tv) if tv == fv => {}
                Some(tv @ V::Obj(_)) if matches!(fv, V::Obj(_)) => fill(path, fv, Some(tv), owned, side, ops, warnings),
                Some(_) => warnings.push(
                    Diagnostic::warning(
                        codes::KEPT,
                        format!("kept your value of `{}` in `{}` (the fragment has another)", dotted(path), side.name),
                    )
                    .in_file(side.file)
                    .help("clawc does not own this key; change it by hand if the fragment's value is the one you want"),
                ),
            }
        }
        path.pop();
    }
}

/// How the rules for a fragment were chosen.
pub(crate) fn select<'r>(fragment: &str, target: &str, runner: Option<&str>) -> Result<&'r FileRule, Diagnostic> {
    let known = || RULES.iter().map(|r| format!("{} ({})", r.role_path(), r.runner.spec().name)).collect::<Vec<_>>().join(", ");
    let runner = match runner {
        None => None,
        Some(name) => match Runner::parse(name) {
            Some(r) => Some(r),
            None => {
                let names = RUNNERS.iter().flat_map(|s| std::iter::once(s.name).chain(s.aliases.iter().copied()));
                let help = crate::diag::suggest(
                    name,
                    names,
                    format!("the runners: {}", RUNNERS.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")),
                );
                return Err(Diagnostic::error(
                    codes::UNKNOWN_RUNNER,
                    format!("--runner `{}` is not a runner clawc knows", crate::diag::printable(name)),
                )
                .help(help));
            }
        },
    };
    let rows = RULES.iter().filter(|r| runner.is_none_or(|x| r.runner == x));
    let mut found = rules::matching(fragment, rows.clone());
    if found.is_empty() && runner.is_some() {
        found = rules::matching(target, rows.clone());
        if found.is_empty() && rows.clone().count() == 1 {
            found = rows.collect();
        }
    }
    match found[..] {
        [one] => Ok(one),
        [] => {
            let tail: Vec<&str> = fragment.rsplit('/').take(2).collect();
            let tail = tail.into_iter().rev().collect::<Vec<_>>().join("/");
            let help = match crate::diag::did_you_mean(&tail, RULES.iter().map(|r| r.path)) {
                Some(p) => {
                    format!("did you mean a fragment named `…/{p}`? Otherwise pass --runner NAME; the runner files are: {}", known())
                }
                None => format!("pass --runner NAME, or merge a fragment named after its runner file: {}", known()),
            };
            let msg = match runner {
                Some(r) => {
                    format!("`{}` is not a file of the runner {} and it has several", crate::diag::printable(fragment), r.spec().name)
                }
                None => format!("`{}` is not a runner file clawc writes", crate::diag::printable(fragment)),
            };
            Err(Diagnostic::error(codes::UNKNOWN_FILE, msg).help(help))
        }
        _ => {
            let which: Vec<String> = found.iter().map(|r| format!("{} ({})", r.role_path(), r.runner.spec().name)).collect();
            Err(Diagnostic::error(
                codes::UNKNOWN_FILE,
                format!("`{}` is the file of more than one runner: {}", crate::diag::printable(fragment), which.join(", ")),
            )
            .help("pass --runner NAME, or name the fragment by its path under the runner's directory (`…/home/…` or `…/project/…`)"))
        }
    }
}

/// A file read for merging.
struct Read {
    bytes: Option<Vec<u8>>,
    mode: u32,
    owner: (u32, u32),
}

fn read(path: &Path, name: &str, fragment: bool) -> Result<Read, Diagnostic> {
    let io = |e: std::io::Error| Diagnostic::error(codes::IO, format!("cannot read `{name}`: {e}")).help("check that the file is readable");
    let tree = fragment.then(|| in_tree(path)).flatten();
    let contents = match &tree {
        // Inside a compiled tree, which is untrusted: no symlink on the way is followed.
        Some((root, rel)) => disk::read(root, rel, disk::MAX_INPUT_BYTES),
        None => disk::read_regular(path, disk::MAX_INPUT_BYTES, name),
    }
    .map_err(io)?;
    let whole = |at: &str| tree.as_ref().is_none_or(|(_, rel)| rel == at);
    let bytes = match contents {
        Contents::Bytes(b) => Some(b),
        Contents::Missing if fragment => {
            return Err(Diagnostic::error(codes::MISSING, format!("`{name}` does not exist"))
                .help("run `clawc compile` first; the fragment is a file under <out>/runners/<agent-id>/"));
        }
        Contents::Missing => None,
        Contents::TooLarge(n) => {
            return Err(Diagnostic::error(
                codes::TOO_LARGE,
                format!("`{name}` is at least {n} bytes; the limit is {}", disk::MAX_INPUT_BYTES),
            )
            .help("a runner config is never this large; check that this is the right file"));
        }
        Contents::Foreign { kind, at } if !whole(&at) => {
            return Err(Diagnostic::error(
                codes::NOT_A_FILE,
                format!("`{name}` is reached through `{}`, which is {}", crate::diag::printable(&at), kind.describe()),
            )
            .help("a compiled tree is untrusted: merge never follows a symlink in it; compile again into a real directory"));
        }
        Contents::Foreign { kind, .. } => {
            let help = if kind == disk::Kind::Symlink {
                "merge reads and replaces regular files only, never through a symlink; name the file the link points to (`readlink -f`)"
            } else {
                "merge reads and replaces regular files only"
            };
            return Err(Diagnostic::error(codes::NOT_A_FILE, format!("`{name}` is {}, not a regular file", kind.describe())).help(help));
        }
    };
    let (mode, owner) = match std::fs::symlink_metadata(path) {
        Ok(m) => (m.mode() & 0o7777, (m.uid(), m.gid())),
        Err(_) => (0o644, (u32::MAX, u32::MAX)),
    };
    Ok(Read { bytes, mode, owner })
}

/// A fragment under a compiled tree's `runners/` directory, as (the directory holding
/// `runners`, the path from there): read component by component without following links.
fn in_tree(path: &Path) -> Option<(std::path::PathBuf, String)> {
    let parts: Vec<&std::ffi::OsStr> = path.iter().collect();
    let i = parts.iter().rposition(|p| *p == "runners")?;
    let root: std::path::PathBuf = parts[..i].iter().collect();
    let rel = parts[i..].iter().map(|p| p.to_str()).collect::<Option<Vec<_>>>()?.join("/");
    disk::is_safe_relative(&rel).then(|| (if root.as_os_str().is_empty() { ".".into() } else { root }, rel))
}

fn text(bytes: Vec<u8>, name: &str) -> Result<String, Diagnostic> {
    String::from_utf8(bytes).map_err(|e| {
        Diagnostic::error(codes::INVALID, format!("`{name}` is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()))
            .help("runner configuration files are UTF-8 text")
    })
}

/// A file of a known syntax, read into a document.
fn parse(syntax: Syntax, file: FileId, sources: &SourceMap) -> Result<V, Diagnostic> {
    let src = sources.get(file);
    if src.text.trim().is_empty() {
        return Ok(V::Obj(Vec::new()));
    }
    let v = match syntax {
        Syntax::Json | Syntax::Json5 => json::read(file, src, syntax),
        Syntax::Toml => toml::read(file, src),
        Syntax::Yaml => yaml::read(file, src),
    }?;
    if let Some((path, n)) = oversized(&v, &mut Vec::new()) {
        return Err(Diagnostic::error(
            codes::TOO_LARGE,
            format!("`{path}` in `{}` holds {n} entries; the limit is {MAX_ENTRIES}", src.name),
        )
        .in_file(file)
        .help("a runner config never holds this many; check that this is the right file"));
    }
    Ok(v)
}

/// An error at a byte offset of a file.
pub(crate) fn invalid_at(file: FileId, src: &crate::sourcemap::SourceFile, offset: usize, what: &str, detail: &str) -> Diagnostic {
    let span = src.span(offset, offset);
    Diagnostic::error(codes::INVALID, format!("`{}` is not valid {what}: {}", src.name, crate::diag::printable(detail)))
        .at(Loc { file, span })
        .help(format!("fix the file at line {}, column {}", span.line, span.col))
}

/// A too-deep file.
pub(crate) fn too_deep(file: FileId, src: &crate::sourcemap::SourceFile, offset: usize) -> Diagnostic {
    Diagnostic::error(codes::TOO_DEEP, format!("`{}` nests deeper than {MAX_DEPTH} levels", src.name))
        .at(Loc { file, span: src.span(offset, offset) })
        .help("a runner configuration never needs this depth; check that this is the right file")
}

/// The request: the two paths as the user wrote them and an optional `--runner`.
pub(crate) struct Request<'a> {
    pub(crate) fragment: &'a Path,
    pub(crate) target: &'a Path,
    pub(crate) runner: Option<&'a str>,
}

/// What a merge would do.
pub(crate) struct Outcome {
    /// TARGET as it is (None: it does not exist).
    pub(crate) old: Option<Vec<u8>>,
    pub(crate) new: Vec<u8>,
    /// What changed, as `set a.b` / `remove a.c` (printable).
    pub(crate) changes: Vec<String>,
    /// Values to show as `${redacted}` in a diff (value → label).
    pub(crate) redact: BTreeMap<String, String>,
    /// The mode and owner the written file gets.
    pub(crate) mode: u32,
    pub(crate) owner: Option<(u32, u32)>,
}

/// Everything a merge found: the files read (for drawing diagnostics), its diagnostics
/// (errors stop it) and, without errors, the outcome.
pub(crate) struct Merged {
    pub(crate) sources: SourceMap,
    pub(crate) diagnostics: Vec<Diagnostic>,
    pub(crate) outcome: Option<Outcome>,
}

/// Computes the merge (reads both files; writes nothing).
pub(crate) fn merge(req: &Request<'_>) -> Merged {
    let mut sources = SourceMap::default();
    let mut diagnostics = Vec::new();
    let outcome = run(req, &mut sources, &mut diagnostics);
    if let Err(errs) = &outcome {
        diagnostics.extend(errs.iter().cloned());
    }
    Merged { sources, diagnostics, outcome: outcome.ok() }
}

fn run(req: &Request<'_>, sources: &mut SourceMap, warnings: &mut Vec<Diagnostic>) -> Result<Outcome, Vec<Diagnostic>> {
    let fname = crate::diag::printable(&req.fragment.to_string_lossy());
    let tname = crate::diag::printable(&req.target.to_string_lossy());
    let rule = select(&req.fragment.to_string_lossy(), &req.target.to_string_lossy(), req.runner).map_err(|e| vec![e])?;
    let frag = read(req.fragment, &fname, true).map_err(|e| vec![e])?;
    let targ = read(req.target, &tname, false).map_err(|e| vec![e])?;
    let ftext = text(frag.bytes.unwrap_or_default(), &fname).map_err(|e| vec![e])?;
    // Both files may hold tokens: diagnostics name a line, never draw it.
    let fid = sources.add_sensitive(fname.clone(), ftext.as_str());
    let fragment = parse(rule.syntax, fid, sources).map_err(|e| vec![e])?;
    let f = Side { file: fid, name: &fname };
    let fragment_private = frag.mode & 0o077 == 0;
    let Some(old) = targ.bytes else {
        // A missing target is the fragment, byte for byte.
        let redact = redactions([&fragment]);
        let changes = vec![format!("create `{tname}` from `{fname}`")];
        return Ok(Outcome { old: None, new: ftext.into_bytes(), changes, redact, mode: frag.mode & 0o666, owner: None });
    };
    let ttext = text(old.clone(), &tname).map_err(|e| vec![e])?;
    let tid = sources.add_sensitive(tname.clone(), ttext.as_str());
    let target = parse(rule.syntax, tid, sources).map_err(|e| vec![e])?;
    let t = Side { file: tid, name: &tname };
    let planned = plan(rule, &target, &fragment, t, f)?;
    if planned.ops.len() > MAX_EDITS {
        return Err(vec![
            Diagnostic::error(
                codes::TOO_LARGE,
                format!("merging `{fname}` into `{tname}` would make {} edits; the limit is {MAX_EDITS}", planned.ops.len()),
            )
            .help("a runner config never needs this many; check that these are the right files"),
        ]);
    }
    warnings.extend(planned.warnings);
    let mode = if fragment_private { targ.mode & !0o077 } else { targ.mode };
    let redact = redactions([&target, &fragment]);
    if planned.ops.is_empty() {
        return Ok(Outcome { old: Some(old.clone()), new: old, changes: Vec::new(), redact, mode, owner: Some(targ.owner) });
    }
    let (new, lost) = match rule.syntax {
        Syntax::Json | Syntax::Json5 => (json::edit(&ttext, rule.syntax, &planned.ops), None),
        Syntax::Toml => (toml::edit(&ttext, &ftext, &planned.ops), None),
        Syntax::Yaml => match yaml::edit(&ttext, &planned.ops, &planned.expected) {
            yaml::Edited::InPlace(s) => (Some(s), None),
            yaml::Edited::Rewritten { text, lost, why } => (Some(text), Some((lost, why))),
        },
    };
    // The edited text must read back as the merge computed on the documents.
    let mut check = SourceMap::default();
    let new = new.filter(|n| {
        let id = check.add_sensitive(tname.clone(), n.as_str());
        parse(rule.syntax, id, &check).is_ok_and(|v| v == planned.expected)
    });
    let Some(new) = new else {
        return Err(vec![
            Diagnostic::error(
                codes::CANNOT_EDIT,
                format!("the merged `{tname}` would not read back as the merge of `{fname}`; nothing is written"),
            )
            .in_file(tid)
            .help("merge by hand (`--stdout` shows nothing in this case); please report the file's layout as a clawc bug"),
        ]);
    };
    if let Some((lost, why)) = lost.filter(|(n, _)| *n > 0) {
        warnings.push(
            Diagnostic::warning(codes::COMMENTS_LOST, format!("{lost} comment(s) of `{tname}` are lost: {why}"))
                .in_file(tid)
                .help("write that part of the file in block style to keep its comments on the next merge"),
        );
    }
    let changes = planned
        .ops
        .iter()
        .map(|op| match op {
            Op::Set(p, _) => format!("set {}", dotted(p)),
            Op::Remove(p) => format!("remove {}", dotted(p)),
        })
        .collect();
    Ok(Outcome { old: Some(old), new: new.into_bytes(), changes, redact, mode, owner: Some(targ.owner) })
}

/// Whether an object key names something secret.
fn secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "authorization",
        "token",
        "secret",
        "password",
        "passwd",
        "api_key",
        "api-key",
        "apikey",
        "cookie",
        "credential",
        "private_key",
        "private-key",
    ]
    .iter()
    .any(|s| k.contains(s))
}

/// Whether every value under this key is shown redacted.
fn secret_map(key: &str) -> bool {
    matches!(key.to_ascii_lowercase().as_str(), "env" | "environment" | "headers" | "http_headers" | "httpheaders")
}

/// The string values to hide in a diff: those under secret-looking keys or in `env` and
/// `headers` maps, unless they are `${VAR}` references (which hold no secret).
fn redactions<'a>(docs: impl IntoIterator<Item = &'a V>) -> BTreeMap<String, String> {
    fn walk(v: &V, secret: bool, out: &mut BTreeMap<String, String>) {
        match v {
            V::Str(s) if secret && s.trim().len() >= 4 && !s.contains("${") && !s.contains("{env:") && !s.starts_with('$') => {
                out.insert(s.clone(), "redacted".to_string());
            }
            V::Arr(items) => items.iter().for_each(|i| walk(i, secret, out)),
            V::Obj(entries) => entries.iter().for_each(|(k, v)| walk(v, secret || secret_key(k) || secret_map(k), out)),
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for d in docs {
        walk(d, false, &mut out);
    }
    out
}

/// A unified diff of TARGET, redacted and with control characters escaped.
pub(crate) fn diff(outcome: &Outcome, target: &str) -> String {
    let show = |b: &[u8]| crate::diag::printable(&String::from_utf8_lossy(&crate::secrets::mask(b, &outcome.redact)));
    let old = outcome.old.as_deref().map(show).unwrap_or_default();
    let new = show(&outcome.new);
    let target = crate::diag::printable(target);
    let (a, b) = if target.starts_with('/') { (target.clone(), target) } else { (format!("a/{target}"), format!("b/{target}")) };
    let a = if outcome.old.is_some() { a } else { "/dev/null".to_string() };
    // Bounded: a hostile pair of 8 MiB files must not make the diff quadratic.
    let d = similar::TextDiff::configure().timeout(std::time::Duration::from_secs(2)).diff_lines(old.as_str(), new.as_str());
    d.unified_diff().context_radius(3).header(&a, &b).to_string()
}

/// Writes the outcome over TARGET: a temporary file in its directory, renamed into place.
pub(crate) fn write(target: &Path, outcome: &Outcome) -> Result<(), Diagnostic> {
    let name = crate::diag::printable(&target.to_string_lossy());
    let fail = |what: &str, e: std::io::Error| {
        Diagnostic::error(codes::IO, format!("cannot {what} `{name}`: {e}")).help("check that the directory of TARGET is writable")
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    std::fs::create_dir_all(&dir).map_err(|e| fail("create the directory of", e))?;
    let file_name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tmp =
        tempfile::Builder::new().prefix(&format!(".{file_name}.clawc-merge-")).tempfile_in(&dir).map_err(|e| fail("write next to", e))?;
    tmp.write_all(&outcome.new).map_err(|e| fail("write", e))?;
    let f = tmp.as_file();
    if let Some((uid, gid)) = outcome.owner {
        // Keep the owner when permitted (root merging a user's file); else it is ours.
        let _ = std::os::unix::fs::fchown(f, Some(uid), Some(gid));
    }
    f.set_permissions(std::fs::Permissions::from_mode(outcome.mode)).map_err(|e| fail("set the mode of", e))?;
    f.sync_all().map_err(|e| fail("write", e))?;
    // Refuse to replace something that became a symlink or directory since it was read.
    if let Ok(m) = std::fs::symlink_metadata(target)
        && !m.file_type().is_file()
    {
        return Err(Diagnostic::error(codes::NOT_A_FILE, format!("`{name}` is {}, not a regular file", disk::Kind::of(&m).describe()))
            .help("merge reads and replaces regular files only"));
    }
    tmp.persist(target).map_err(|e| fail("replace", e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(json: serde_json::Value) -> V {
        fn conv(v: serde_json::Value) -> V {
            match v {
                serde_json::Value::Null => V::Null,
                serde_json::Value::Bool(b) => V::Bool(b),
                serde_json::Value::Number(n) => V::Num(n.to_string()),
                serde_json::Value::String(s) => V::Str(s),
                serde_json::Value::Array(a) => V::Arr(a.into_iter().map(conv).collect()),
                serde_json::Value::Object(o) => V::Obj(o.into_iter().map(|(k, v)| (k, conv(v))).collect()),
            }
        }
        conv(json)
    }

    fn run_plan(path: &str, target: serde_json::Value, fragment: serde_json::Value) -> Planned {
        let rule = select(path, "", None).unwrap();
        let mut sources = SourceMap::default();
        let (t, f) = (sources.add("t", ""), sources.add("f", ""));
        plan(rule, &obj(target), &obj(fragment), Side { file: t, name: "t" }, Side { file: f, name: "f" })
            .map_err(|e| format!("{e:?}"))
            .unwrap()
    }

    #[test]
    fn claude_permissions_of_named_servers_are_replaced() {
        let p = run_plan(
            "out/runners/a/home/.claude/settings.json",
            serde_json::json!({"permissions": {"allow": ["Bash(ls)", "mcp__api__old", "mcp__api", "mcp__apix__y", "mcp__other__z"], "deny": ["mcp__api__x"]}}),
            serde_json::json!({"permissions": {"allow": ["mcp__api__quote"]}}),
        );
        assert_eq!(
            p.expected,
            obj(
                serde_json::json!({"permissions": {"allow": ["Bash(ls)", "mcp__apix__y", "mcp__other__z", "mcp__api__quote"], "deny": []}})
            )
        );
    }

    #[test]
    fn opencode_tool_keys_follow_the_longest_server_name() {
        let p = run_plan(
            "home/.config/opencode/opencode.json",
            serde_json::json!({"mcp": {"a_b": {"x": 1}}, "tools": {"a_*": false, "a_old": true, "a_b_keep": true, "mine": true}}),
            serde_json::json!({"$schema": "s", "mcp": {"a": {"y": 2}}, "tools": {"a_new": true}}),
        );
        assert_eq!(
            p.expected,
            obj(
                serde_json::json!({"mcp": {"a_b": {"x": 1}, "a": {"y": 2}}, "tools": {"a_b_keep": true, "mine": true, "a_new": true}, "$schema": "s"})
            )
        );
    }

    #[test]
    fn unowned_keys_fill_in_and_differing_ones_warn() {
        let p = run_plan(
            "home/.codex/config.toml",
            serde_json::json!({"model": "mine", "mcp_servers": {"api": {"enabled_tools": ["a", "b", "c"], "extra": 1}, "other": {}}}),
            serde_json::json!({"model": "theirs", "new": {"x": 1}, "mcp_servers": {"api": {"enabled_tools": ["a"]}}}),
        );
        assert_eq!(
            p.expected,
            obj(serde_json::json!({"model": "mine", "mcp_servers": {"api": {"enabled_tools": ["a"]}, "other": {}}, "new": {"x": 1}}))
        );
        assert_eq!(p.warnings.len(), 1);
        assert_eq!(p.warnings[0].code, codes::KEPT);
    }

    #[test]
    fn nanobot_whitelist_is_a_union() {
        let p = run_plan(
            "home/.nanobot/config.json",
            serde_json::json!({"tools": {"ssrfWhitelist": ["a", "b"]}}),
            serde_json::json!({"tools": {"ssrfWhitelist": ["b", "c"], "mcpServers": {}}}),
        );
        assert_eq!(p.expected, obj(serde_json::json!({"tools": {"ssrfWhitelist": ["a", "b", "c"]}})));
    }

    #[test]
    fn rules_are_chosen_by_path_and_runner() {
        assert_eq!(select("out/runners/a/home/.codex/config.toml", "x", None).unwrap().runner, Runner::Codex);
        assert_eq!(select("runners/a/project/.claude/settings.json", "x", None).unwrap().runner, Runner::NanoClaw);
        assert_eq!(select("runners/a/home/.claude/settings.json", "x", None).unwrap().runner, Runner::ClaudeCode);
        assert_eq!(select(".claude/settings.json", "x", None).unwrap_err().code, codes::UNKNOWN_FILE);
        assert_eq!(select(".claude/settings.json", "x", Some("claude")).unwrap().runner, Runner::ClaudeCode);
        assert_eq!(select("frag.toml", "x", Some("codex")).unwrap().path, ".codex/config.toml");
        assert_eq!(select("frag.json", "/u/.claude.json", Some("claude-code")).unwrap().path, ".claude.json");
        assert_eq!(select("frag.json", "x", Some("claude-code")).unwrap_err().code, codes::UNKNOWN_FILE);
        assert_eq!(select("frag.json", "x", None).unwrap_err().code, codes::UNKNOWN_FILE);
        assert_eq!(select("frag.json", "x", Some("codx")).unwrap_err().code, codes::UNKNOWN_RUNNER);
    }

    #[test]
    fn redaction_hides_secret_values_but_not_references() {
        let r = redactions([&obj(
            serde_json::json!({"s": {"headers": {"Authorization": "Bearer sk-live", "X": "${TOKEN}"}, "env": {"A": "plain-value"}, "name": "visible"}}),
        )]);
        assert!(r.contains_key("Bearer sk-live") && r.contains_key("plain-value"));
        assert!(!r.contains_key("${TOKEN}") && !r.contains_key("visible"));
    }

    /// Mutated targets (bytes deleted, inserted, duplicated) never panic: every one is
    /// merged, or refused with a diagnostic; what is merged reads back as the merge.
    #[test]
    fn mutated_targets_never_panic() {
        let cases: [(&str, &str, &str); 5] = [
            (
                "home/.codex/config.toml",
                "# c\nmodel = \"o3\"\n[mcp_servers.api]\nurl = \"u\"\nenabled_tools = [\"a\", \"b\"]\n[x.y]\nz = { a = [1, 2.5, true] }\n",
                "[mcp_servers.api]\nurl = \"v\"\n",
            ),
            (
                "home/.claude.json",
                "{\n  // c\n  \"a\": [1, {\"b\": null}],\n  \"mcpServers\": {\"api\": {\"url\": \"u\"}, \"m\": {}},\n}\n",
                "{\"mcpServers\": {\"api\": {\"url\": \"v\"}}}",
            ),
            (
                "home/.openclaw/openclaw.json",
                "{\n  a: 'x', b: 0x1F, c: +1, d: .5,\n  mcp: {servers: {api: {url: 'u'}}},\n}\n",
                "{\"mcp\": {\"servers\": {\"api\": {\"url\": \"v\"}}}}",
            ),
            (
                "home/.hermes/config.yaml",
                "# c\na: &x {b: 1}\nc: *x\nmcp_servers:\n  api:\n    url: u\n    l: [1, 2]\n  m:\n    - x\n    - y: z\n",
                "mcp_servers:\n  api:\n    url: v\n",
            ),
            (
                "home/.config/goose/config.yaml",
                "extensions:\n  dev: {type: builtin}\n  api: |\n    text\n# end\n",
                "extensions:\n  api:\n    uri: v\n",
            ),
        ];
        let noise = b"{}[]\"',:#\n -=&*!|>.\\0x1a";
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let dir = tempfile::tempdir().unwrap();
        for (rel, target, fragment) in cases {
            let f = dir.path().join("runners/a").join(rel);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, fragment).unwrap();
            let t = dir.path().join("target");
            for _ in 0..300 {
                let mut bytes = target.as_bytes().to_vec();
                for _ in 0..1 + next(3) {
                    let at = next(bytes.len() + 1);
                    match next(3) {
                        0 if at < bytes.len() => {
                            bytes.remove(at);
                        }
                        1 => bytes.insert(at, noise[next(noise.len())]),
                        _ => {
                            let end = (at + next(8)).min(bytes.len());
                            let piece = bytes[at.min(end)..end].to_vec();
                            bytes.splice(at..at, piece);
                        }
                    }
                }
                std::fs::write(&t, &bytes).unwrap();
                let m = merge(&Request { fragment: &f, target: &t, runner: None });
                if let Some(o) = m.outcome {
                    assert!(m.diagnostics.iter().all(|d| !d.is_error()));
                    std::fs::write(&t, &o.new).unwrap();
                    let again = merge(&Request { fragment: &f, target: &t, runner: None });
                    let o2 = again.outcome.unwrap_or_else(|| {
                        panic!("{rel}: the merge of {:?} does not merge again: {:?}", String::from_utf8_lossy(&bytes), again.diagnostics)
                    });
                    assert_eq!(o2.new, o.new, "{rel}: not idempotent for {:?}", String::from_utf8_lossy(&bytes));
                } else {
                    assert!(m.diagnostics.iter().any(Diagnostic::is_error));
                }
            }
        }
    }
}
