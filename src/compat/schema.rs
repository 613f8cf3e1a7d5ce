//! Direction-aware comparison of two JSON Schemas (a tool's `inputSchema` or
//! `outputSchema` in two releases), after the normalisation of the specification
//! (section 2): local `$ref`s resolved at the use site with cycle detection, `allOf` of
//! object schemas flattened, `[T, "null"]` ≡ a nullable `anyOf`/`oneOf`, a one-value
//! `enum` ≡ `const`, sets compared as sets, numbers as exact decimals.
//!
//! Every keyword is read as [`rules::KEYWORDS`] says. The work is bounded: schemas nest
//! at most [`MAX_DEPTH`] levels once `$ref`s are followed, and one comparison visits at
//! most [`MAX_VISITS`] schema pairs (a `$ref` fan-out can make a small document
//! exponentially large); past either bound the rest is an `*_UNCLASSIFIED` finding and
//! the caller raises a warning — never a silent pass, never a hang.

use super::number::Dec;
use super::rules::{self, Handling, RuleRef, handling};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// Deepest schema nesting compared (path segments below the schema root, `$ref`s followed).
pub(crate) const MAX_DEPTH: usize = 64;
/// Most schema pairs one comparison visits.
pub(crate) const MAX_VISITS: usize = 100_000;
/// Longest chain of `$ref`s to `$ref`s followed at one node.
const MAX_REF_HOPS: usize = 32;
/// Most schema nodes one canonical form (for matching branches and renames) is built from.
const MAX_CANON: usize = 20_000;

/// Which way the schema is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// `inputSchema`: NEW must accept every call OLD accepted.
    In,
    /// `outputSchema`: NEW must produce only what OLD could.
    Out,
}

/// One difference inside a schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SchemaFinding {
    pub rule: RuleRef,
    /// Segments of the JSON pointer below the schema root (at the use site).
    pub path: Vec<String>,
    pub message: String,
    pub keyword: Option<String>,
}

/// The findings, and why the comparison was cut short (when it was).
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub findings: Vec<SchemaFinding>,
    pub limited: Option<String>,
}

/// Compares two schemas read in direction `dir`.
pub(crate) fn compare(old: &Value, new: &Value, dir: Dir) -> Outcome {
    let mut c = Cmp { old_root: old, new_root: new, dir, out: Outcome::default(), visits: 0, stack: Vec::new(), path: Vec::new() };
    c.node(old, new);
    c.out
}

/// The JSON pointer of `segments` (`~` and `/` escaped).
pub(crate) fn pointer(segments: &[String]) -> String {
    segments.iter().map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1"))).collect()
}

/// A schema as an object: `true` is `{}`, `false` is `{"not": {}}`, anything else that
/// is not an object (invalid, but never trusted) is kept opaque under `$invalid`.
fn as_map(v: &Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m.clone(),
        Value::Bool(true) => Map::new(),
        Value::Bool(false) => Map::from_iter([("not".to_string(), json!({}))]),
        other => Map::from_iter([("$invalid".to_string(), other.clone())]),
    }
}

fn is_annotation(k: &str) -> bool {
    matches!(handling(k), Some(Handling::Annotation) | None)
}

/// Resolves a local reference: `#`, `#/json/pointer` (percent- and `~`-decoded) or
/// `#anchor` (an `$anchor` anywhere in the document). External references are refused
/// at load by clawc's meta-validation; here they stay unresolved.
fn resolve_ref<'v>(root: &'v Value, r: &str) -> Option<&'v Value> {
    let frag = r.strip_prefix('#')?;
    if frag.is_empty() {
        return Some(root);
    }
    if let Some(ptr) = frag.strip_prefix('/') {
        let mut cur = root;
        for seg in ptr.split('/') {
            let seg = percent_decode(seg).replace("~1", "/").replace("~0", "~");
            cur = match cur {
                Value::Object(m) => m.get(&seg)?,
                Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        return Some(cur);
    }
    find_anchor(root, frag, 0)
}

fn find_anchor<'v>(v: &'v Value, name: &str, depth: usize) -> Option<&'v Value> {
    if depth > MAX_DEPTH * 2 {
        return None;
    }
    match v {
        Value::Object(m) => {
            if m.get("$anchor").and_then(Value::as_str) == Some(name) {
                return Some(v);
            }
            m.values().find_map(|c| find_anchor(c, name, depth + 1))
        }
        Value::Array(a) => a.iter().find_map(|c| find_anchor(c, name, depth + 1)),
        _ => None,
    }
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(h) = u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16)
        {
            out.push(h);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A `$ref`'s target with the keywords beside the `$ref` (2020-12 allows them): their
/// annotations override, other keywords join when they do not conflict; a conflict keeps
/// both as an `allOf`.
fn merge_ref(target: Map<String, Value>, siblings: Map<String, Value>) -> Map<String, Value> {
    if siblings.is_empty() {
        return target;
    }
    let mut m = target.clone();
    for (k, v) in &siblings {
        if is_annotation(k) || k == "default" || m.get(k).is_none_or(|t| t == v) {
            m.insert(k.clone(), v.clone());
        } else {
            return Map::from_iter([("allOf".to_string(), json!([Value::Object(target), Value::Object(siblings)]))]);
        }
    }
    m
}

/// The schema at a node as the rules read it, and the first `$ref` followed to get it.
fn effective(root: &Value, v: &Value, depth: usize) -> (Map<String, Value>, Option<String>) {
    let mut cur = as_map(v);
    let mut first = None;
    for _ in 0..MAX_REF_HOPS {
        let Some(Value::String(r)) = cur.get("$ref") else { break };
        let Some(target) = resolve_ref(root, r) else { break };
        let r = r.clone();
        first.get_or_insert(r);
        let mut siblings = cur;
        for k in ["$ref", "$defs", "definitions"] {
            siblings.remove(k);
        }
        cur = merge_ref(as_map(target), siblings);
    }
    if depth < 8 {
        cur = flatten_all_of(root, cur, depth);
        cur = nullable(root, cur, depth);
    }
    (cur, first)
}

/// Whether a schema describes an object (its `type` is `object`, or it only has object
/// keywords): the conjuncts `allOf` flattening accepts.
fn is_object_schema(m: &Map<String, Value>) -> bool {
    match m.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(_) => false,
        None => m.keys().all(|k| {
            is_annotation(k) || matches!(k.as_str(), "properties" | "required" | "additionalProperties" | "minProperties" | "maxProperties")
        }),
    }
}

/// `allOf` whose conjuncts are object schemas → one schema: properties merged, `required`
/// unioned, other keywords joined when equal. Anything else stays as written.
fn flatten_all_of(root: &Value, m: Map<String, Value>, depth: usize) -> Map<String, Value> {
    let Some(Value::Array(conjuncts)) = m.get("allOf") else { return m };
    let mut out = m.clone();
    out.remove("allOf");
    for c in conjuncts {
        let (c, _) = effective(root, c, depth + 1);
        if !is_object_schema(&c) || c.contains_key("allOf") {
            return m;
        }
        for (k, v) in c {
            match (k.as_str(), out.get_mut(&k)) {
                (_, None) => {
                    out.insert(k, v);
                }
                ("properties", Some(Value::Object(props))) => {
                    let Value::Object(more) = v else { return m };
                    for (p, s) in more {
                        match props.get(&p) {
                            Some(existing) if *existing != s => return m,
                            _ => {
                                props.insert(p, s);
                            }
                        }
                    }
                }
                ("required", Some(Value::Array(req))) => {
                    let Value::Array(more) = v else { return m };
                    for r in more {
                        if !req.contains(&r) {
                            req.push(r);
                        }
                    }
                }
                (k, Some(existing)) => {
                    if *existing != v && !is_annotation(k) {
                        return m;
                    }
                }
            }
        }
    }
    out
}

/// `anyOf`/`oneOf` of two branches, one of them `{"type": "null"}` → the other branch
/// with `null` added to its `type` (oasdiff's NULLABILITY).
fn nullable(root: &Value, m: Map<String, Value>, depth: usize) -> Map<String, Value> {
    for kw in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = m.get(kw) else { continue };
        if branches.len() != 2 || m.keys().any(|k| k != kw && !is_annotation(k)) {
            continue;
        }
        let a = effective(root, &branches[0], depth + 1).0;
        let b = effective(root, &branches[1], depth + 1).0;
        let is_null = |s: &Map<String, Value>| {
            s.get("type").and_then(Value::as_str) == Some("null") && s.keys().all(|k| k == "type" || is_annotation(k))
        };
        let other = match (is_null(&a), is_null(&b)) {
            (true, false) => b,
            (false, true) => a,
            _ => continue,
        };
        let Some(types) = type_set(&other) else { continue };
        let mut out = other;
        let mut types: BTreeSet<String> = types;
        types.insert("null".to_string());
        out.insert("type".to_string(), Value::Array(types.into_iter().map(Value::String).collect()));
        for (k, v) in &m {
            if k != kw {
                out.insert(k.clone(), v.clone());
            }
        }
        return out;
    }
    m
}

/// The `type` keyword as a set (`None`: any type).
fn type_set(m: &Map<String, Value>) -> Option<BTreeSet<String>> {
    match m.get("type")? {
        Value::String(s) => Some(BTreeSet::from([s.clone()])),
        Value::Array(a) => Some(a.iter().filter_map(Value::as_str).map(str::to_string).collect()),
        _ => None,
    }
}

const ALL_TYPES: [&str; 6] = ["array", "boolean", "null", "number", "object", "string"];

/// Whether a value of JSON type `t` is accepted by the type set `set`.
fn accepts(set: Option<&BTreeSet<String>>, t: &str) -> bool {
    set.is_none_or(|s| s.contains(t) || (t == "integer" && s.contains("number")))
}

fn types_of(set: Option<&BTreeSet<String>>) -> Vec<String> {
    match set {
        Some(s) => s.iter().cloned().collect(),
        None => ALL_TYPES.iter().map(|t| (*t).to_string()).collect(),
    }
}

/// A JSON value in canonical form: numbers that are whole are integers (`1.0` = `1`).
fn canon_value(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() < 9.0e15 { json!(f as i64) } else { v.clone() }
        }
        Value::Array(a) => Value::Array(a.iter().map(canon_value).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), canon_value(v))).collect()),
        _ => v.clone(),
    }
}

/// The values an `enum`/`const` allows, canonical and as text (`None`: any value).
fn value_set(m: &Map<String, Value>) -> Option<BTreeSet<String>> {
    if let Some(c) = m.get("const") {
        return Some(BTreeSet::from([canon_value(c).to_string()]));
    }
    match m.get("enum")? {
        Value::Array(a) => Some(a.iter().map(|v| canon_value(v).to_string()).collect()),
        _ => None,
    }
}

/// Canonical form of a schema for equality (matching `anyOf`/`oneOf` branches, renames,
/// unclassified keywords): `$ref`s resolved (a cycle becomes a marker), annotations
/// dropped, sets sorted, a one-value `enum` as `const`.
pub(crate) fn canonical(root: &Value, v: &Value) -> Value {
    let mut budget = MAX_CANON;
    canon(root, v, &mut Vec::new(), &mut budget, 0)
}

fn canon(root: &Value, v: &Value, stack: &mut Vec<String>, budget: &mut usize, depth: usize) -> Value {
    if *budget == 0 || depth > MAX_DEPTH {
        return json!({"$opaque": v.to_string().chars().take(4096).collect::<String>()});
    }
    *budget -= 1;
    if !(v.is_object() || v.is_boolean()) {
        return json!({ "$invalid": canon_value(v) });
    }
    let (m, key) = effective(root, v, 0);
    if let Some(k) = &key {
        if stack.contains(k) {
            return json!({ "$cycle": k });
        }
        stack.push(k.clone());
    }
    let mut out = Map::new();
    for (k, val) in &m {
        let sub = |x: &Value, stack: &mut Vec<String>, budget: &mut usize| canon(root, x, stack, budget, depth + 1);
        let c = match (handling(k), k.as_str()) {
            (None | Some(Handling::Annotation | Handling::Default), _) => continue,
            (Some(Handling::Reference), r) if r != "$ref" => continue,
            (_, "properties" | "patternProperties" | "dependentSchemas") => match val {
                Value::Object(ps) => Value::Object(ps.iter().map(|(p, s)| (p.clone(), sub(s, stack, budget))).collect()),
                other => canon_value(other),
            },
            (_, "prefixItems" | "items" | "allOf" | "anyOf" | "oneOf") if val.is_array() => {
                let mut items: Vec<Value> = val.as_array().into_iter().flatten().map(|s| sub(s, stack, budget)).collect();
                if k != "prefixItems" && k != "items" {
                    items.sort_by_cached_key(Value::to_string);
                    items.dedup();
                }
                Value::Array(items)
            }
            (
                _,
                "items"
                | "additionalProperties"
                | "additionalItems"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames"
                | "unevaluatedProperties"
                | "unevaluatedItems",
            ) => sub(val, stack, budget),
            (_, "required" | "enum") if val.is_array() => {
                let mut items: Vec<Value> = val.as_array().into_iter().flatten().map(canon_value).collect();
                items.sort_by_cached_key(Value::to_string);
                items.dedup();
                Value::Array(items)
            }
            (_, "type") => match type_set(&m) {
                Some(t) if t.len() == 1 => json!(t.into_iter().next()),
                Some(t) => json!(t),
                None => canon_value(val),
            },
            _ => canon_value(val),
        };
        out.insert(k.clone(), c);
    }
    if let Some(Value::Array(e)) = out.get("enum")
        && e.len() == 1
        && !out.contains_key("const")
    {
        let one = e[0].clone();
        out.remove("enum");
        out.insert("const".into(), one);
    }
    if key.is_some() {
        stack.pop();
    }
    Value::Object(out)
}

/// A bound keyword's family: lower or upper bounds of one quantity.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    Lower,
    Upper,
}

/// Length and count bounds (numbers are compared with their exclusive forms).
const SIMPLE_BOUNDS: &[(&str, Bound)] = &[
    ("minLength", Bound::Lower),
    ("maxLength", Bound::Upper),
    ("minItems", Bound::Lower),
    ("maxItems", Bound::Upper),
    ("minProperties", Bound::Lower),
    ("maxProperties", Bound::Upper),
    ("minContains", Bound::Lower),
    ("maxContains", Bound::Upper),
];

/// A numeric bound: its value, whether it is exclusive, and the keyword that sets it.
type NumBound = (Dec, bool, &'static str);

/// The effective lower (`minimum`/`exclusiveMinimum`) or upper bound of a number.
fn num_bound(m: &Map<String, Value>, side: Bound) -> Option<NumBound> {
    let (inc, exc) = if side == Bound::Lower { ("minimum", "exclusiveMinimum") } else { ("maximum", "exclusiveMaximum") };
    let inclusive = m.get(inc).and_then(Value::as_number).map(Dec::of);
    // Draft 4: a boolean `exclusiveMinimum` makes `minimum` exclusive.
    if let Some(Value::Bool(b)) = m.get(exc) {
        return inclusive.map(|d| (d, *b, inc));
    }
    let exclusive = m.get(exc).and_then(Value::as_number).map(Dec::of);
    match (inclusive, exclusive) {
        (Some(i), Some(e)) => {
            // The tighter of the two.
            let e_tighter = if side == Bound::Lower { e >= i } else { e <= i };
            Some(if e_tighter { (e, true, exc) } else { (i, false, inc) })
        }
        (Some(i), None) => Some((i, false, inc)),
        (None, Some(e)) => Some((e, true, exc)),
        (None, None) => None,
    }
}

/// Whether bound `new` admits fewer values than `old` (`Some(true)`), more (`Some(false)`),
/// or the same.
fn tighter(old: &NumBound, new: &NumBound, side: Bound) -> Option<bool> {
    use std::cmp::Ordering;
    let ord = new.0.cmp(&old.0);
    let ord = if side == Bound::Upper { ord.reverse() } else { ord };
    match ord {
        Ordering::Greater => Some(true),
        Ordering::Less => Some(false),
        Ordering::Equal if new.1 == old.1 => None,
        Ordering::Equal => Some(new.1),
    }
}

fn show_bound(b: &NumBound) -> String {
    format!("{} {}", b.2, b.0)
}

/// A finding's wording for a value set.
fn show_values(v: &BTreeSet<String>, limit: usize) -> String {
    let mut s: Vec<&str> = v.iter().map(String::as_str).take(limit).collect();
    if v.len() > limit {
        s.push("…");
    }
    s.join(", ")
}

/// How an object treats keys it does not declare.
#[derive(Clone, Debug, PartialEq)]
enum Openness {
    Open,
    Closed,
    Schema(Value),
}

fn openness(m: &Map<String, Value>) -> Openness {
    match m.get("additionalProperties") {
        Some(Value::Bool(false)) => Openness::Closed,
        Some(Value::Bool(true)) | None => {
            if m.get("unevaluatedProperties") == Some(&Value::Bool(false)) {
                Openness::Closed
            } else {
                Openness::Open
            }
        }
        Some(s) => Openness::Schema(s.clone()),
    }
}

fn required_set(m: &Map<String, Value>) -> BTreeSet<String> {
    m.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

fn props(m: &Map<String, Value>) -> Option<&Map<String, Value>> {
    m.get("properties").and_then(Value::as_object)
}

struct Cmp<'a> {
    old_root: &'a Value,
    new_root: &'a Value,
    dir: Dir,
    out: Outcome,
    visits: usize,
    /// `$ref` pairs being compared (cycle detection).
    stack: Vec<(Option<String>, Option<String>)>,
    path: Vec<String>,
}

impl Cmp<'_> {
    /// The input rule or the output rule, by direction.
    fn pick(&self, input: RuleRef, output: RuleRef) -> RuleRef {
        if self.dir == Dir::In { input } else { output }
    }

    fn emit(&mut self, rule: RuleRef, at: &[&str], keyword: Option<&str>, message: String) {
        let mut path = self.path.clone();
        path.extend(at.iter().map(|s| (*s).to_string()));
        self.out.findings.push(SchemaFinding { rule, path, message, keyword: keyword.map(str::to_string) });
    }

    fn unclassified(&mut self, at: &[&str], keyword: Option<&str>, message: String) {
        let rule = self.pick(rules::INPUT_UNCLASSIFIED, rules::OUTPUT_UNCLASSIFIED);
        self.emit(rule, at, keyword, message);
    }

    fn child(&mut self, segs: &[&str], o: &Value, n: &Value) {
        let before = self.path.len();
        self.path.extend(segs.iter().map(|s| (*s).to_string()));
        self.node(o, n);
        self.path.truncate(before);
    }

    fn node(&mut self, o: &Value, n: &Value) {
        if self.out.limited.is_some() {
            return;
        }
        self.visits += 1;
        if self.visits > MAX_VISITS {
            let why = format!("the comparison visits more than {MAX_VISITS} schema nodes once $refs are expanded");
            self.unclassified(&[], None, format!("not compared further: {why}"));
            self.out.limited = Some(why);
            return;
        }
        if self.path.len() > MAX_DEPTH {
            let why = format!("the schema nests deeper than {MAX_DEPTH} levels once $refs are followed");
            self.unclassified(&[], None, format!("not compared further: {why}"));
            self.out.limited = Some(why);
            return;
        }
        if o == n && !contains_ref(o) {
            return;
        }
        let (om, ok) = effective(self.old_root, o, 0);
        let (nm, nk) = effective(self.new_root, n, 0);
        let pair = (ok, nk);
        let pushed = pair.0.is_some() || pair.1.is_some();
        if pushed {
            if self.stack.contains(&pair) {
                return;
            }
            self.stack.push(pair);
        }
        self.maps(&om, &nm);
        if pushed {
            self.stack.pop();
        }
    }

    fn maps(&mut self, o: &Map<String, Value>, n: &Map<String, Value>) {
        if o == n && !o.values().any(contains_ref) {
            return;
        }
        if let (Some(a), Some(b)) = (o.get("$invalid"), n.get("$invalid")) {
            if a != b {
                self.unclassified(&[], None, "the schema is not a JSON Schema object and changed".into());
            }
            return;
        }
        if !self.types(o, n) {
            return;
        }
        self.values(o, n);
        self.bounds(o, n);
        self.strings(o, n);
        self.object(o, n);
        self.items(o, n);
        for kw in ["anyOf", "oneOf"] {
            self.variants(kw, o, n);
        }
        self.rest(o, n);
    }

    /// `type`. Returns false when the types no longer overlap (the rest is not compared).
    fn types(&mut self, o: &Map<String, Value>, n: &Map<String, Value>) -> bool {
        let (to, tn) = (type_set(o), type_set(n));
        if to == tn {
            return true;
        }
        let lost: Vec<String> = types_of(to.as_ref()).into_iter().filter(|t| !accepts(tn.as_ref(), t)).collect();
        let gained: Vec<String> = types_of(tn.as_ref()).into_iter().filter(|t| !accepts(to.as_ref(), t)).collect();
        let show = |s: Option<&BTreeSet<String>>| s.map_or_else(|| "any".to_string(), |s| s.iter().cloned().collect::<Vec<_>>().join("|"));
        let change = format!("type {} → {}", show(to.as_ref()), show(tn.as_ref()));
        let (breaking, compatible, bad, good) = match self.dir {
            Dir::In => (rules::INPUT_TYPE_NARROWED, rules::INPUT_TYPE_WIDENED, &lost, &gained),
            Dir::Out => (rules::OUTPUT_TYPE_WIDENED, rules::OUTPUT_TYPE_NARROWED, &gained, &lost),
        };
        if !bad.is_empty() {
            let what = if self.dir == Dir::In { "no longer accepted" } else { "may now be returned" };
            self.emit(breaking, &["type"], Some("type"), format!("{change}: {} {what}", bad.join(", ")));
        } else if !good.is_empty() {
            let what = if self.dir == Dir::In { "now accepted" } else { "no longer returned" };
            self.emit(compatible, &["type"], Some("type"), format!("{change}: {} {what}", good.join(", ")));
        }
        types_of(to.as_ref()).iter().any(|t| accepts(tn.as_ref(), t)) || types_of(tn.as_ref()).iter().any(|t| accepts(to.as_ref(), t))
    }

    /// `enum` and `const`.
    fn values(&mut self, o: &Map<String, Value>, n: &Map<String, Value>) {
        let (vo, vn) = (value_set(o), value_set(n));
        if vo == vn {
            return;
        }
        let kw = |m: &Map<String, Value>| if m.contains_key("const") { "const" } else { "enum" };
        let at = if vn.is_some() { kw(n) } else { kw(o) };
        match self.dir {
            Dir::In => match (&vo, &vn) {
                (_, Some(b)) if b.len() == 1 => {
                    let msg = format!("only {} is accepted now", show_values(b, 5));
                    self.emit(rules::INPUT_CONST_ADDED, &[at], Some(at), msg);
                }
                (None, Some(b)) => {
                    let msg = format!("an enum was introduced: only {} accepted", show_values(b, 8));
                    self.emit(rules::INPUT_ENUM_VALUE_REMOVED, &[at], Some(at), msg);
                }
                (Some(a), None) if a.len() == 1 => {
                    self.emit(rules::INPUT_CONST_REMOVED, &[at], Some(at), format!("const {} dropped", show_values(a, 1)));
                }
                (Some(_), None) => self.emit(rules::INPUT_ENUM_VALUE_ADDED, &[at], Some(at), "the enum was dropped".into()),
                (Some(a), Some(b)) => {
                    let removed: BTreeSet<String> = a.difference(b).cloned().collect();
                    let added: BTreeSet<String> = b.difference(a).cloned().collect();
                    if !removed.is_empty() {
                        let msg = format!("enum value(s) {} no longer accepted", show_values(&removed, 8));
                        self.emit(rules::INPUT_ENUM_VALUE_REMOVED, &[at], Some(at), msg);
                    }
                    if !added.is_empty() {
                        let msg = format!("enum value(s) {} now accepted", show_values(&added, 8));
                        self.emit(rules::INPUT_ENUM_VALUE_ADDED, &[at], Some(at), msg);
                    }
                }
                (None, None) => {}
            },
            Dir::Out => match (&vo, &vn) {
                (Some(a), _) if a.len() == 1 => {
                    let now = vn.as_ref().map_or_else(|| "any value".to_string(), |b| show_values(b, 5));
                    let msg = format!("the result was always {}; now {now}", show_values(a, 1));
                    self.emit(rules::OUTPUT_CONST_REMOVED, &[at], Some(at), msg);
                }
                (None, Some(b)) => {
                    let msg = format!("results are now limited to {}", show_values(b, 8));
                    self.emit(rules::OUTPUT_CONSTRAINT_TIGHTENED, &[at], Some(at), msg);
                }
                (Some(_), None) => {
                    self.emit(rules::OUTPUT_ENUM_VALUE_ADDED, &[at], Some(at), "the enum was dropped: any value may be returned".into());
                }
                (Some(a), Some(b)) => {
                    let removed: BTreeSet<String> = a.difference(b).cloned().collect();
                    let added: BTreeSet<String> = b.difference(a).cloned().collect();
                    if !added.is_empty() {
                        let msg = format!("enum value(s) {} may now be returned", show_values(&added, 8));
                        self.emit(rules::OUTPUT_ENUM_VALUE_ADDED, &[at], Some(at), msg);
                    }
                    if !removed.is_empty() {
                        let msg = format!("enum value(s) {} are no longer returned", show_values(&removed, 8));
                        self.emit(rules::OUTPUT_ENUM_VALUE_REMOVED, &[at], Some(at), msg);
                    }
                }
                (None, None) => {}
            },
        }
    }

    /// A bound set, raised, lowered or dropped.
    fn bound_change(&mut self, keyword: &str, tightened: bool, message: String) {
        let rule = match (self.dir, tightened) {
            (Dir::In, true) => rules::INPUT_CONSTRAINT_TIGHTENED,
            (Dir::In, false) => rules::INPUT_CONSTRAINT_LOOSENED,
            (Dir::Out, true) => rules::OUTPUT_CONSTRAINT_TIGHTENED,
            (Dir::Out, false) => rules::OUTPUT_CONSTRAINT_LOOSENED,
        };
        self.emit(rule, &[keyword], Some(keyword), message);
    }

    fn bounds(&mut self, o: &Map<String, Value>, n: &Map<String, Value>) {
        for side in [Bound::Lower, Bound::Upper] {
            match (num_bound(o, side), num_bound(n, side)) {
                (None, Some(b)) => self.bound_change(b.2, true, format!("{} set", show_bound(&b))),
                (Some(a), None) => self.bound_change(a.2, false, format!("{} dropped", show_bound(&a))),
                (Some(a), Some(b)) => {
                    if let Some(t) = tighter(&a, &b, side) {
                        let verb = if t { "tightened" } else { "loosened" };
                        self.bound_change(b.2, t, format!("{verb}: {} → {}", show_bound(&a), show_bound(&b)));
                    }
                }
                (None, None) => {}
            }
        }
        for (kw, side) in SIMPLE_BOUNDS {
            let get = |m: &Map<String, Value>| m.get(*kw).and_then(Value::as_number).map(Dec::of);
            match (get(o), get(n)) {
                (None, Some(b)) => self.bound_change(kw, true, format!("{kw} {b} set")),
                (Some(a), None) => self.bound_change(kw, false, format!("{kw} {a} dropped")),
                (Some(a), Some(b)) if a != b => {
                    let t = if *side == Bound::Lower { b > a } else { b < a };
                    let verb = if t { "tightened" } else { "loosened" };
                    self.bound_change(kw, t, format!("{kw} {verb}: {a} → {b}"));
                }
                _ => {}
            }
        }
        let mult = |m: &Map<String, Value>| m.get("multipleOf").and_then(Value::as_number).map(Dec::of);
        match (mult(o), mult(n)) {
            (None, Some(b)) => self.bound_change("multipleOf", true, format!("multipleOf {b} set")),
            (Some(a), None) => self.bound_change("multipleOf", false, format!("multipleOf {a} dropped")),
            (Some(a), Some(b)) if a != b => match a.is_multiple_of(&b) {
                Some(true) => self.bound_change("multipleOf", false, format!("multipleOf loosened: {a} → {b} (divides the old one)")),
                Some(false) => self.bound_change("multipleOf", true, format!("multipleOf {a} → {b} (does not divide the old one)")),
                None => self.unclassified(
                    &["multipleOf"],
                    Some("multipleOf"),
                    format!("multipleOf {a} → {b}: too far apart in scale to decide"),
                ),
            },
            _ => {}
        }
        let unique = |m: &Map<String, Value>| m.get("uniqueItems") == Some(&Value::Bool(true));
        match (unique(o), unique(n)) {
            (false, true) => self.bound_change("uniqueItems", true, "uniqueItems set".into()),
            (true, false) => self.bound_change("uniqueItems", false, "uniqueItems dropped".into()),
            _ => {}
        }
    }

    /// `pattern` and `format`.
    fn strings(&mut self, o: &Map<String, Value>, n: &Map<String, Value>) {
        for kw in ["pattern", "format"] {
            let (a, b) = (o.get(kw), n.get(kw));
            if a == b {
                continue;
            }
            let show = |v: Option<&Value>| {
                v.map_or_else(|| "none".to_string(), |v| v.as_str().map_or_else(|| v.to_string(), |s| format!("`{s}`")))
            };
            let change = format!("{kw} {} → {}", show(a), show(b));
            let rule = match (self.dir, kw, a.is_some(), b.is_some()) {
                (Dir::In, _, true, false) => {
                    self.bound_change(kw, false, format!("{change} (dropped)"));
                    continue;
                }
                (Dir::In, "pattern", false, true) => rules::INPUT_PATTERN_ADDED,
                (Dir::In, "pattern", _, _) => rules::INPUT_PATTERN_CHANGED,
                (Dir::In, _, _, _) => rules::INPUT_FORMAT_CHANGED,
                (Dir::Out, _, false, true) => {
                    self.bound_change(kw, true, format!("{change} (added)"));
                    continue;
                }
                (Dir::Out, _, _, _) => rules::OUTPUT_STRING_FORMAT_CHANGED,
            };
            self.emit(rule, &[kw], Some(kw), change);
        }
    }

    fn object(&mut self, o: &Map<String, Value>, n: &Map<String, Value>) {
        let empty = Map::new();
        let (po, pn) = (props(o).unwrap_or(&empty), props(n).unwrap_or(&empty));
        let (ro, rn) = (required_set(o), required_set(n));
        let (ao, an) = (openness(o), openness(n));
        for (p, s) in po {
            if pn.contains_key(p) {
                continue;
            }
            match self.dir {
                Dir::In => match &an {
                    Openness::Closed => self.emit(
                        rules::INPUT_PROPERTY_REMOVED,
                        &["properties", p],
                        None,
                        format!("property `{p}` removed from a closed object: calls that send it are rejected"),
                    ),
                    open => {
                        self.emit(
                            rules::INPUT_PROPERTY_REMOVED_OPEN,
                            &["properties", p],
                            None,
                            format!("property `{p}` removed: still accepted, now unconstrained and probably ignored"),
                        );
                        if let Openness::Schema(rest) = open {
                            let rest = rest.clone();
                            self.child(&["properties", p], s, &rest);
                        }
                    }
                },
                Dir::Out => {
                    if ro.contains(p) {
                        self.emit(
                            rules::OUTPUT_PROPERTY_REMOVED,
                            &["properties", p],
                            None,
                            format!("required result property `{p}` removed"),
                        );
                    } else {
                        let msg = format!("optional result property `{p}` removed");
                        self.emit(rules::OUTPUT_OPTIONAL_PROPERTY_REMOVED, &["properties", p], None, msg);
                    }
                }
            }
        }
        for (p, s) in pn {
            match po.get(p) {
                Some(old) => self.child(&["properties", p], old, s),
                None => match self.dir {
                    Dir::In if rn.contains(p) => {
                        self.emit(
                            rules::INPUT_REQUIRED_ADDED,
                            &["properties", p],
                            Some("required"),
                            format!("new required property `{p}`"),
                        );
                    }
                    Dir::In => {
                        self.emit(rules::INPUT_PROPERTY_ADDED, &["properties", p], None, format!("optional property `{p}` added"));
                        if let Openness::Schema(rest) = &ao {
                            let rest = rest.clone();
                            self.child(&["properties", p], &rest, s);
                        }
                    }
                    Dir::Out => self.emit(rules::OUTPUT_PROPERTY_ADDED, &["properties", p], None, format!("result property `{p}` added")),
                },
            }
        }
        for r in rn.difference(&ro) {
            if !pn.contains_key(r) || po.contains_key(r) {
                let (rule, msg) = match self.dir {
                    Dir::In => (rules::INPUT_REQUIRED_ADDED, format!("property `{r}` is now required")),
                    Dir::Out => (rules::OUTPUT_REQUIRED_ADDED, format!("result property `{r}` is now always present")),
                };
                self.emit(rule, &["properties", r], Some("required"), msg);
            }
        }
        for r in ro.difference(&rn) {
            if po.contains_key(r) && !pn.contains_key(r) {
                continue; // reported as a removed property
            }
            let (rule, msg) = match self.dir {
                Dir::In => (rules::INPUT_REQUIRED_REMOVED, format!("property `{r}` is no longer required")),
                Dir::Out => (rules::OUTPUT_REQUIRED_REMOVED, format!("result property `{r}` may now be absent")),
            };
            self.emit(rule, &["properties", r], Some("required"), msg);
        }
        let kw = "additionalProperties";
        let at = if o.contains_key(kw) || n.contains_key(kw) { kw } else { "unevaluatedProperties" };
        match (&ao, &an) {
            (a, b) if a == b => {}
            (Openness::Schema(a), Openness::Schema(b)) => {
                let (a, b) = (a.clone(), b.clone());
                self.child(&[kw], &a, &b);
            }
            (Openness::Open, _) | (Openness::Schema(_), Openness::Closed) => {
                let rule = self.pick(rules::INPUT_ADDITIONAL_PROPERTIES_CLOSED, rules::OUTPUT_ADDITIONAL_PROPERTIES_CLOSED);
                self.emit(rule, &[at], Some(at), "undeclared properties are now rejected or constrained".into());
            }
            (Openness::Closed, _) | (Openness::Schema(_), Openness::Open) => {
                let rule = self.pick(rules::INPUT_ADDITIONAL_PROPERTIES_OPENED, rules::OUTPUT_ADDITIONAL_PROPERTIES_OPENED);
                let msg = if self.dir == Dir::In {
                    "undeclared properties are now accepted"
                } else {
                    "undeclared properties may now appear in results"
                };
                self.emit(rule, &[at], Some(at), msg.into());
            }
        }
    }

    /// `items` (a schema, or the pre-2020 array form), `prefixItems` by position.
    fn items(&mut self, o: &Map<String, Value>, n: &Map<String, Value>) {
        let tuple = |m: &Map<String, Value>| -> (Vec<Value>, Option<Value>) {
            match (m.get("prefixItems"), m.get("items")) {
                (Some(Value::Array(p)), rest) => (p.clone(), rest.cloned()),
                (None, Some(Value::Array(p))) => (p.clone(), m.get("additionalItems").cloned()),
                (_, rest) => (Vec::new(), rest.cloned()),
            }
        };
        let (po, rest_o) = tuple(o);
        let (pn, rest_n) = tuple(n);
        let any = Value::Bool(true);
        let prefix_kw = if n.contains_key("prefixItems") || o.contains_key("prefixItems") { "prefixItems" } else { "items" };
        for i in 0..po.len().max(pn.len()) {
            let a = po.get(i).or(rest_o.as_ref()).unwrap_or(&any).clone();
            let b = pn.get(i).or(rest_n.as_ref()).unwrap_or(&any).clone();
            self.child(&[prefix_kw, &i.to_string()], &a, &b);
        }
        if rest_o.is_some() || rest_n.is_some() {
            let rest_kw = if prefix_kw == "items" && (!po.is_empty() || !pn.is_empty()) { "additionalItems" } else { "items" };
            let a = rest_o.unwrap_or(Value::Bool(true));
            let b = rest_n.unwrap_or(Value::Bool(true));
            self.child(&[rest_kw], &a, &b);
        }
    }

    /// `anyOf` / `oneOf`: branches matched by canonical equality.
    fn variants(&mut self, kw: &str, o: &Map<String, Value>, n: &Map<String, Value>) {
        let (bo, bn) = match (o.get(kw), n.get(kw)) {
            (None, None) => return,
            (Some(Value::Array(a)), Some(Value::Array(b))) => (a, b),
            _ => {
                let a = o.get(kw).map(|v| canonical(self.old_root, &json!({ kw: v })));
                let b = n.get(kw).map(|v| canonical(self.new_root, &json!({ kw: v })));
                if a != b {
                    self.unclassified(&[kw], Some(kw), format!("`{kw}` added or removed: the change cannot be classified"));
                }
                return;
            }
        };
        let co: Vec<Value> = bo.iter().map(|b| canonical(self.old_root, b)).collect();
        let cn: Vec<Value> = bn.iter().map(|b| canonical(self.new_root, b)).collect();
        let mut used = vec![false; bn.len()];
        let mut removed = Vec::new();
        for (i, c) in co.iter().enumerate() {
            match (0..cn.len()).find(|&j| !used[j] && cn[j] == *c) {
                Some(j) => {
                    used[j] = true;
                    let idx = j.to_string();
                    self.child(&[kw, &idx], &bo[i], &bn[j]);
                }
                None => removed.push(i),
            }
        }
        let added: Vec<usize> = (0..bn.len()).filter(|&j| !used[j]).collect();
        match (removed.is_empty(), added.is_empty()) {
            (true, true) => {}
            (false, false) => self.unclassified(&[kw], Some(kw), format!("a `{kw}` branch was modified: the change cannot be classified")),
            (false, true) => {
                let rule = self.pick(rules::INPUT_VARIANT_REMOVED, rules::OUTPUT_VARIANT_REMOVED);
                for i in removed {
                    self.emit(rule, &[kw, &i.to_string()], Some(kw), format!("`{kw}` branch {i} removed"));
                }
            }
            (true, false) => {
                for j in added {
                    let idx = j.to_string();
                    let rule = match self.dir {
                        Dir::Out => rules::OUTPUT_VARIANT_ADDED,
                        Dir::In if kw == "anyOf" => rules::INPUT_VARIANT_ADDED,
                        Dir::In => {
                            let others: Vec<usize> = (0..bn.len()).filter(|&k| k != j).collect();
                            let mine = effective(self.new_root, &bn[j], 0).0;
                            if others.iter().all(|&k| disjoint(&mine, &effective(self.new_root, &bn[k], 0).0)) {
                                rules::INPUT_VARIANT_ADDED
                            } else {
                                rules::INPUT_UNCLASSIFIED
                            }
                        }
                    };
                    let msg = if rule == rules::INPUT_UNCLASSIFIED {
                        format!("`{kw}` branch {j} added and may overlap another branch: calls matching both are rejected")
                    } else {
                        format!("`{kw}` branch {j} added")
                    };
                    self.emit(rule, &[kw, &idx], Some(kw), msg);
                }
            }
        }
    }

    /// Every other keyword: unclassified, default, dialect, annotations.
    fn rest(&mut self, o: &Map<String, Value>, n: &Map<String, Value>) {
        let keys: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
        for k in keys {
            let (a, b) = (o.get(k.as_str()), n.get(k.as_str()));
            if a == b && !a.is_some_and(contains_ref) {
                continue;
            }
            match handling(k) {
                Some(Handling::Unclassified | Handling::AllOf) => {
                    // The keyword alone, so its value is read as that keyword's value.
                    let ca = a.map(|v| canonical(self.old_root, &json!({ k.as_str(): v })));
                    let cb = b.map(|v| canonical(self.new_root, &json!({ k.as_str(): v })));
                    if ca != cb {
                        self.unclassified(&[k], Some(k), format!("`{k}` changed: the rules cannot classify the change"));
                    }
                }
                Some(Handling::Dialect) => {
                    if a != b {
                        self.unclassified(&[k], Some(k), format!("`{k}` changed: a dialect change cannot be classified"));
                    }
                }
                Some(Handling::Reference) => {
                    // Only an unresolved `$ref` is left here.
                    if k == "$ref" && a != b {
                        self.unclassified(&[k], Some(k), "an unresolved `$ref` changed".into());
                    }
                }
                Some(Handling::Default) if self.dir == Dir::In => {
                    if a != b {
                        let show = |v: Option<&Value>| v.map_or_else(|| "none".to_string(), Value::to_string);
                        let msg = format!("default {} → {}: callers that omit it get other behaviour", show(a), show(b));
                        self.emit(rules::INPUT_DEFAULT_CHANGED, &[k], Some(k), msg);
                    }
                }
                Some(Handling::Default | Handling::Annotation) | None => {
                    if a != b && k != "$invalid" {
                        let rule = self.pick(rules::INPUT_ANNOTATION_CHANGED, rules::OUTPUT_ANNOTATION_CHANGED);
                        let verb = match (a, b) {
                            (None, _) => "added",
                            (_, None) => "removed",
                            _ => "changed",
                        };
                        self.emit(rule, &[k], Some(k), format!("`{k}` {verb}"));
                    }
                }
                Some(_) => {}
            }
        }
    }
}

/// Whether a value holds a `$ref` anywhere (equal text may still resolve differently).
fn contains_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.contains_key("$ref") || m.values().any(contains_ref),
        Value::Array(a) => a.iter().any(contains_ref),
        _ => false,
    }
}

/// Whether two `oneOf` branches provably share no instance: disjoint types, disjoint
/// `const`/`enum` values, or a property both require with disjoint values.
fn disjoint(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    if let (Some(ta), Some(tb)) = (type_set(a), type_set(b))
        && !ta.iter().any(|t| accepts(Some(&tb), t))
        && !tb.iter().any(|t| accepts(Some(&ta), t))
    {
        return true;
    }
    if let (Some(va), Some(vb)) = (value_set(a), value_set(b))
        && va.is_disjoint(&vb)
    {
        return true;
    }
    let (ra, rb) = (required_set(a), required_set(b));
    let (Some(pa), Some(pb)) = (props(a), props(b)) else { return false };
    ra.intersection(&rb).any(|p| {
        let va = pa.get(p).and_then(Value::as_object).and_then(value_set);
        let vb = pb.get(p).and_then(Value::as_object).and_then(value_set);
        matches!((va, vb), (Some(x), Some(y)) if x.is_disjoint(&y))
    })
}
