//! Checks that a tool's `inputSchema` is itself a valid JSON Schema: valid against its
//! meta-schema (draft 2020-12 unless `$schema` names another bundled draft) and
//! compilable (patterns are valid regexes, `$ref`s resolve without network or files).

use super::json_span::Seg;
use serde_json::Value;

const KNOWN_DRAFTS: &[&str] = &[
    "http://json-schema.org/draft-04/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
];

/// A problem inside the schema: where (relative to the schema) and what.
pub struct SchemaProblem {
    pub path: Vec<Seg>,
    pub message: String,
}

pub fn check(schema: &Value) -> Result<(), SchemaProblem> {
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
    // The meta-schema check only ran on bundled drafts (guarded above), so it cannot panic.
    if let Err(e) = jsonschema::meta::validate(schema) {
        return Err(SchemaProblem { path: pointer_to_path(schema, &e.instance_path().to_string()), message: e.to_string() });
    }
    if let Err(e) = jsonschema::validator_for(schema) {
        return Err(SchemaProblem { path: pointer_to_path(schema, &e.instance_path().to_string()), message: e.to_string() });
    }
    Ok(())
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
        assert!(check(&json!({"type": "object", "properties": {"a": {"type": "string"}}})).is_ok());
        let e = check(&json!({"type": "object", "properties": {"a": {"type": "strng"}}})).unwrap_err();
        assert_eq!(e.path, vec![Seg::Key("properties".into()), Seg::Key("a".into()), Seg::Key("type".into())]);
        assert!(check(&json!({"type": "object", "properties": {"a": {"pattern": "(unclosed"}}})).is_err());
        assert!(check(&json!({"$schema": "https://example.com/mine", "type": "object"})).is_err());
        assert!(check(&json!({"$schema": 5, "type": "object"})).is_err());
        assert!(check(&json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"})).is_ok());
        assert!(check(&json!({"type": "object", "properties": {"a": {"$ref": "https://example.com/x.json"}}})).is_err());
    }
}
