//! The Skill Tools parameter subset, and its translation to an MCP `inputSchema`.
//!
//! A `tools.json` tool's `parameters` is an object of parameter name → definition, each
//! definition holding exactly the subset the specification allows: `type` (one of
//! `string`, `number`, `boolean`, `object`, `array`; required), `description` (required),
//! `enum` (a non-empty array of values of that type) and `optional` (a boolean, default
//! false). Anything else is outside the subset and makes the tool invalid. The schema is
//! `{"type": "object", "properties": {…}, "required": [the non-optional parameters, in
//! declaration order]}`.

use super::json::Json;
use crate::describe::json_span::Seg;
use serde_json::{Map, Value, json};

/// The JSON Schema types a parameter may have.
pub(crate) const TYPES: &[&str] = &["string", "number", "boolean", "object", "array"];
/// The keys of a parameter definition.
pub(crate) const KEYS: &[&str] = &["type", "description", "enum", "optional"];
/// The argument the Skill Tools runtime adds to every call (the agent's working directory):
/// no parameter may take its name.
pub(crate) const RESERVED: &str = "__workDir";

/// A problem with one parameter: the message and where, relative to the tool.
pub(crate) type Problem = (String, Vec<Seg>);

/// The `inputSchema` for `parameters` (absent: no parameters), or every problem found.
pub(crate) fn input_schema(parameters: Option<&Json>) -> Result<Value, Vec<Problem>> {
    let base = vec![Seg::Key("parameters".into())];
    let entries = match parameters {
        None => &[][..],
        Some(Json::Object(entries)) => &entries[..],
        Some(other) => {
            return Err(vec![(format!("`parameters` must be an object of parameter definitions, not {}", other.kind_name()), base)]);
        }
    };
    let mut problems = Vec::new();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, def) in entries {
        let at = |extra: Option<&str>| {
            let mut p = base.clone();
            p.push(Seg::Key(name.clone()));
            if let Some(k) = extra {
                p.push(Seg::Key(k.to_string()));
            }
            p
        };
        let shown = crate::diag::printable(name);
        if properties.contains_key(name) {
            problems.push((format!("parameter \"{shown}\" is declared twice"), at(None)));
            continue;
        }
        if name.is_empty() {
            problems.push(("a parameter has an empty name".to_string(), at(None)));
            continue;
        }
        if name == RESERVED {
            problems.push((
                format!("parameter \"{RESERVED}\" is reserved: the runtime passes the agent's working directory under that name"),
                at(None),
            ));
            continue;
        }
        let Json::Object(fields) = def else {
            problems.push((
                format!("parameter \"{shown}\" must be an object with `type` and `description`, not {}", def.kind_name()),
                at(None),
            ));
            continue;
        };
        let before = problems.len();
        if let Some(k) = def.duplicate_key() {
            let msg = format!("parameter \"{shown}\": the key `{}` is given twice", crate::diag::printable(k));
            problems.push((msg, at(None)));
        }
        for (k, _) in fields {
            if !KEYS.contains(&k.as_str()) {
                problems.push((
                    format!(
                        "parameter \"{shown}\": `{}` is not part of the Skill Tools parameter subset (type, description, enum, optional)",
                        crate::diag::printable(k)
                    ),
                    at(Some(k)),
                ));
            }
        }
        let ty = match def.get("type") {
            Some(Json::String(t)) if TYPES.contains(&t.as_str()) => Some(t.as_str()),
            Some(Json::String(t)) => {
                let msg = format!(
                    "parameter \"{shown}\": type \"{}\" is not one of string, number, boolean, object, array",
                    crate::diag::printable(t)
                );
                problems.push((msg, at(Some("type"))));
                None
            }
            Some(other) => {
                problems.push((format!("parameter \"{shown}\": `type` must be a string, not {}", other.kind_name()), at(Some("type"))));
                None
            }
            None => {
                problems.push((format!("parameter \"{shown}\": `type` is required"), at(None)));
                None
            }
        };
        let description = match def.get("description") {
            Some(Json::String(d)) if !d.trim().is_empty() => Some(d.clone()),
            Some(Json::String(_)) => {
                problems.push((format!("parameter \"{shown}\": `description` is empty"), at(Some("description"))));
                None
            }
            Some(other) => {
                problems.push((
                    format!("parameter \"{shown}\": `description` must be a string, not {}", other.kind_name()),
                    at(Some("description")),
                ));
                None
            }
            None => {
                problems.push((format!("parameter \"{shown}\": `description` is required"), at(None)));
                None
            }
        };
        let optional = match def.get("optional") {
            None => false,
            Some(Json::Bool(b)) => *b,
            Some(other) => {
                problems.push((
                    format!("parameter \"{shown}\": `optional` must be true or false, not {}", other.kind_name()),
                    at(Some("optional")),
                ));
                false
            }
        };
        let allowed = match def.get("enum") {
            None => None,
            Some(Json::Array(values)) if values.is_empty() => {
                problems.push((format!("parameter \"{shown}\": `enum` is empty, so no value would be allowed"), at(Some("enum"))));
                None
            }
            Some(Json::Array(values)) => {
                if let Some((i, v)) = ty.and_then(|t| values.iter().enumerate().find(|(_, v)| !of_type(v, t))) {
                    let mut p = at(Some("enum"));
                    p.push(Seg::Index(i));
                    problems.push((
                        format!("parameter \"{shown}\": enum value {} is {}, not a {}", i, v.kind_name(), ty.unwrap_or_default()),
                        p,
                    ));
                }
                Some(values.iter().map(Json::to_value).collect::<Vec<_>>())
            }
            Some(other) => {
                problems.push((
                    format!("parameter \"{shown}\": `enum` must be an array of allowed values, not {}", other.kind_name()),
                    at(Some("enum")),
                ));
                None
            }
        };
        if problems.len() > before {
            continue;
        }
        let (Some(ty), Some(description)) = (ty, description) else { continue };
        let mut prop = json!({"type": ty, "description": description});
        if let Some(values) = allowed {
            prop["enum"] = Value::Array(values);
        }
        properties.insert(name.clone(), prop);
        if !optional {
            required.push(Value::String(name.clone()));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(json!({"type": "object", "properties": properties, "required": required}))
}

/// Whether `v` is a value of the parameter type `ty`.
fn of_type(v: &Json, ty: &str) -> bool {
    matches!(
        (ty, v),
        ("string", Json::String(_))
            | ("number", Json::Number(_))
            | ("boolean", Json::Bool(_))
            | ("object", Json::Object(_))
            | ("array", Json::Array(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(params: &str) -> Result<Value, Vec<String>> {
        input_schema(Some(&Json::parse(params).unwrap())).map_err(|ps| ps.into_iter().map(|(m, _)| m).collect())
    }

    #[test]
    fn required_is_the_non_optional_parameters_in_declaration_order() {
        let s = schema(
            r#"{"z": {"type": "string", "description": "z"}, "a": {"type": "number", "description": "a", "optional": true},
                "m": {"type": "boolean", "description": "m", "optional": false, "enum": [true]}}"#,
        )
        .unwrap();
        assert_eq!(s["required"], json!(["z", "m"]));
        assert_eq!(s["properties"]["m"], json!({"type": "boolean", "description": "m", "enum": [true]}));
        assert_eq!(input_schema(None).unwrap(), json!({"type": "object", "properties": {}, "required": []}));
    }

    #[test]
    fn everything_outside_the_subset_is_refused() {
        for (params, part) in [
            (r#"[]"#, "must be an object"),
            (r#"{"a": {"type": "integer", "description": "a"}}"#, "not one of"),
            (r#"{"a": {"description": "a"}}"#, "`type` is required"),
            (r#"{"a": {"type": "string"}}"#, "`description` is required"),
            (r#"{"a": {"type": "string", "description": "a", "default": "x"}}"#, "not part of the Skill Tools parameter subset"),
            (r#"{"a": {"type": "string", "description": "a", "optional": "yes"}}"#, "`optional` must be"),
            (r#"{"a": {"type": "string", "description": "a", "enum": []}}"#, "`enum` is empty"),
            (r#"{"a": {"type": "string", "description": "a", "enum": ["x", 1]}}"#, "enum value 1 is a number"),
            (r#"{"a": {"type": "string", "description": "a"}, "a": {"type": "string", "description": "a"}}"#, "declared twice"),
            (r#"{"__workDir": {"type": "string", "description": "a"}}"#, "reserved"),
            (r#"{"a": "string"}"#, "must be an object with"),
            (r#"{"a": {"type": "string", "type": "number", "description": "a"}}"#, "the key `type` is given twice"),
        ] {
            let e = schema(params).unwrap_err();
            assert!(e.iter().any(|m| m.contains(part)), "{params}: {e:?}");
        }
    }
}
