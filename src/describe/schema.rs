//! Checks that a tool's `inputSchema` is itself a valid JSON Schema: valid against its
//! meta-schema (draft 2020-12 unless `$schema` names another bundled draft) and
//! compilable (patterns are valid regexes, `$ref`s resolve without network or files).

use super::json_span::Seg;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};

/// Schemas already found valid in this process, by the SHA-256 of their (key-sorted) JSON:
/// two releases of a service compared by `compat`, or the replicated tools of a large
/// pod, mostly repeat schemas, and compiling one (its regexes above all) is the costly
/// part of describing a service. Only successes are kept: a failure may depend on the
/// descriptor's pattern budget.
static VALID: LazyLock<Mutex<HashSet<[u8; 32]>>> = LazyLock::new(|| Mutex::new(HashSet::new()));
/// Entries kept at most (32 bytes each); past it the set starts again.
const MAX_REMEMBERED: usize = 100_000;

const KNOWN_DRAFTS: &[&str] = &[
    "http://json-schema.org/draft-04/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
];

/// A problem inside the schema: where (relative to the schema) and what.
pub(crate) struct SchemaProblem {
    pub path: Vec<Seg>,
    pub message: String,
}

/// `budget`: bytes of pattern matches this descriptor may still compile (see
/// [`PATTERN_BUDGET`]); each accepted pattern spends what it can match.
pub(crate) fn check(schema: &Value, budget: &mut usize) -> Result<(), SchemaProblem> {
    let key: [u8; 32] = Sha256::digest(serde_json::to_vec(schema).expect("a JSON value serializes")).into();
    if VALID.lock().is_ok_and(|set| set.contains(&key)) {
        return Ok(());
    }
    compile_check(schema, budget)?;
    if let Ok(mut set) = VALID.lock() {
        if set.len() >= MAX_REMEMBERED {
            set.clear();
        }
        set.insert(key);
    }
    Ok(())
}

fn compile_check(schema: &Value, budget: &mut usize) -> Result<(), SchemaProblem> {
    if let Some(s) = schema.get("$schema") {
        let known = s.as_str().is_some_and(|uri| {
            let uri = uri.trim_end_matches('#');
            KNOWN_DRAFTS
                .iter()
                .any(|d| *d == uri || d.replacen("https://", "http://", 1) == uri || d.replacen("http://", "https://", 1) == uri)
        });
        if !known {
            return Err(SchemaProblem {
                path: vec![Seg::Key("$schema".into())],
                message: "`$schema` must name a JSON Schema draft (4, 6, 7, 2019-09 or 2020-12)".into(),
            });
        }
    }
    costly_pattern(schema, &mut Vec::new(), budget)?;
    // The meta-schema check only ran on bundled drafts (guarded above), so it cannot panic.
    if let Err(e) = jsonschema::meta::validate(schema) {
        return Err(SchemaProblem { path: pointer_to_path(schema, &e.instance_path().to_string()), message: e.to_string() });
    }
    if let Err(e) = jsonschema::validator_for(schema) {
        return Err(SchemaProblem { path: pointer_to_path(schema, &e.instance_path().to_string()), message: e.to_string() });
    }
    Ok(())
}

/// Longest text a schema pattern may be built to match, in bytes. Compiling a regex costs
/// time in proportion to what it can match (`\p{L}{1000000}` is 14 characters and seconds
/// of compilation), and the meta-schema check compiles every pattern of every tool.
const MAX_PATTERN_MATCH: usize = 16 * 1024;
/// What all patterns of one descriptor may match together, so that many tools cannot add
/// up what one pattern may not.
pub(crate) const PATTERN_BUDGET: usize = 256 * 1024;
/// Largest `{n}` / `{n,m}` bound in a pattern the Rust regex parser cannot read (one with
/// ECMA-262 lookaround or backreferences).
const MAX_REPEAT: u64 = 1000;

/// Finds the first `pattern` value or `patternProperties` key too costly to compile.
fn costly_pattern(v: &Value, path: &mut Vec<Seg>, budget: &mut usize) -> Result<(), SchemaProblem> {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                path.push(Seg::Key(k.clone()));
                if let (Some(p), "pattern") = (child.as_str(), k.as_str()) {
                    check_pattern(p, path, budget)?;
                }
                if let (Some(props), "patternProperties") = (child.as_object(), k.as_str()) {
                    for key in props.keys() {
                        path.push(Seg::Key(key.clone()));
                        check_pattern(key, path, budget)?;
                        path.pop();
                    }
                }
                costly_pattern(child, path, budget)?;
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                costly_pattern(child, path, budget)?;
                path.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_pattern(p: &str, path: &[Seg], budget: &mut usize) -> Result<(), SchemaProblem> {
    let cost = match regex_syntax::ParserBuilder::new().nest_limit(64).build().parse(p) {
        Ok(hir) => {
            let props = hir.properties();
            props.minimum_len().unwrap_or(0).max(props.maximum_len().unwrap_or(0)).max(p.len())
        }
        Err(_) if repeat_bounds(p).any(|n| n > MAX_REPEAT) => usize::MAX,
        Err(_) => p.len(),
    };
    let shown: String = p.chars().take(40).collect();
    let shown = format!("{shown}{}", if shown.len() < p.len() { "…" } else { "" });
    if cost > MAX_PATTERN_MATCH {
        let message =
            format!("the pattern `{shown}` can match more than {MAX_PATTERN_MATCH} bytes; clawc refuses patterns this costly to compile");
        return Err(SchemaProblem { path: path.to_vec(), message });
    }
    if cost > *budget {
        let message = format!(
            "with the pattern `{shown}`, this descriptor's patterns can match more than {PATTERN_BUDGET} bytes in all; clawc refuses to compile that many"
        );
        return Err(SchemaProblem { path: path.to_vec(), message });
    }
    *budget -= cost;
    Ok(())
}

/// The numbers of every `{n}`, `{n,}` and `{n,m}` in `p`.
fn repeat_bounds(p: &str) -> impl Iterator<Item = u64> + '_ {
    p.split('{').skip(1).filter_map(|rest| rest.split_once('}')).flat_map(|(inside, _)| {
        let nums: Vec<u64> = inside.split(',').filter_map(|n| n.trim().parse().ok()).collect();
        let ok = !inside.is_empty() && inside.chars().all(|c| c.is_ascii_digit() || c == ',');
        if ok { nums } else { Vec::new() }
    })
}

/// JSON Pointer → path, deciding index vs key by the value actually found there.
fn pointer_to_path(root: &Value, pointer: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    let mut cur = root;
    for raw in pointer.split('/').skip(1) {
        let key = raw.replace("~1", "/").replace("~0", "~");
        let next = match cur {
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i).map(|v| (Seg::Index(i), v))),
            Value::Object(map) => map.get(&key).map(|v| (Seg::Key(key.clone()), v)),
            _ => None,
        };
        let Some((seg, v)) = next else { break };
        out.push(seg);
        cur = v;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_and_invalid_schemas() {
        assert!(check(&json!({"type": "object", "properties": {"a": {"type": "string"}}}), &mut { PATTERN_BUDGET }).is_ok());
        let e = check(&json!({"type": "object", "properties": {"a": {"type": "strng"}}}), &mut { PATTERN_BUDGET }).unwrap_err();
        assert_eq!(e.path, vec![Seg::Key("properties".into()), Seg::Key("a".into()), Seg::Key("type".into())]);
        assert!(check(&json!({"type": "object", "properties": {"a": {"pattern": "(unclosed"}}}), &mut { PATTERN_BUDGET }).is_err());
        assert!(check(&json!({"$schema": "https://example.com/mine", "type": "object"}), &mut { PATTERN_BUDGET }).is_err());
        assert!(check(&json!({"$schema": 5, "type": "object"}), &mut { PATTERN_BUDGET }).is_err());
        assert!(check(&json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}), &mut { PATTERN_BUDGET }).is_ok());
        assert!(
            check(&json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/x.json"}}}), &mut { PATTERN_BUDGET })
                .is_err()
        );
    }
}

#[cfg(test)]
mod pattern_tests {
    use super::*;

    #[test]
    fn costly_patterns_are_refused_before_compilation() {
        let slow = serde_json::json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "\\p{L}{1000000}"}}});
        let start = std::time::Instant::now();
        let e = check(&slow, &mut { PATTERN_BUDGET }).err().unwrap();
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        assert!(e.message.contains("can match more than"), "{}", e.message);
        assert_eq!(e.path.len(), 3);
        let keyed = serde_json::json!({"type": "object", "patternProperties": {"(?=x)a{100000}": {}}});
        assert!(check(&keyed, &mut { PATTERN_BUDGET }).is_err());
        let fine = serde_json::json!({"type": "object", "patternProperties": {"^[a-z]{1,64}$": {}}, "properties": {"b": {"pattern": "^(?!x).*$"}}});
        assert!(check(&fine, &mut { PATTERN_BUDGET }).is_ok());
        // Many tools cannot add up what one may not (distinct schemas: one already found
        // valid is not compiled again, so it costs nothing).
        let mid = |i: usize| serde_json::json!({"type": "object", "properties": {"a": {"pattern": format!("^{i}.{{0,4000}}$")}}});
        let mut budget = PATTERN_BUDGET;
        let accepted = (0..100).take_while(|i| check(&mid(*i), &mut budget).is_ok()).count();
        assert!((10..20).contains(&accepted), "{accepted}");
        let again = (0..100).filter(|i| check(&mid(*i % 5), &mut budget.clone()).is_ok()).count();
        assert_eq!(again, 100, "schemas found valid before are not charged again");
    }
}
