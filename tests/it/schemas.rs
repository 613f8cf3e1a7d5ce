//! The published schemas in `schemas/` describe what clawc really reads and writes: the
//! example's descriptors and every compiled artifact validate against them.

use super::harness::tree;
use serde_json::Value;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn validator(name: &str) -> jsonschema::Validator {
    let load = |n: &str| -> Value { serde_json::from_str(&std::fs::read_to_string(root().join("schemas").join(n)).unwrap()).unwrap() };
    let schema = load(name);
    assert!(jsonschema::meta::validate(&schema).is_ok(), "{name} is not a valid schema");
    // Schemas refer to each other by $id; register them all so nothing is fetched.
    let mut registry = jsonschema::Registry::new();
    for other in ["descriptor-v1.schema.json", "report.schema.json", "service-report.schema.json", "skill-counts.schema.json"] {
        registry = registry.add(format!("https://clawdapus.dev/schemas/clawc/{other}"), load(other)).unwrap();
    }
    let registry = registry.prepare().unwrap();
    jsonschema::options().with_registry(&registry).build(&schema).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Whether the file at `rel` is of `kind`: a file name, or `report/` for the agent
/// services' reports.
fn is_kind(rel: &str, kind: &str) -> bool {
    if kind == "report/" { rel.starts_with(kind) } else { rel.ends_with(kind) && !rel.starts_with("report/") }
}

#[track_caller]
fn check(v: &jsonschema::Validator, what: &str, instance: &Value) {
    let errors: Vec<String> = v.iter_errors(instance).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{what}: {errors:?}");
}

#[test]
fn compiled_artifacts_match_their_schemas() {
    let expected = root().join("examples/trading-desk/expected");
    let files = tree(&expected);
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for (kind, schema) in [
        ("tools.json", "tools.schema.json"),
        ("feeds.json", "feeds.schema.json"),
        ("memory.json", "memory.schema.json"),
        ("report.json", "report.schema.json"),
        ("report/", "service-report.schema.json"),
    ] {
        let v = validator(schema);
        for (rel, bytes) in files.iter().filter(|(rel, _)| is_kind(rel, kind)) {
            check(&v, rel, &serde_json::from_slice(bytes).unwrap());
            *seen.entry(kind).or_default() += 1;
        }
    }
    assert_eq!(seen.len(), 5, "every artifact kind is covered: {seen:?}");
}

/// Native agents' `runner.json` and a report with native grants (the native golden case).
#[test]
fn runner_files_match_their_schemas() {
    let files = tree(&root().join("tests/cases/native-runners/expected/out"));
    let mut seen = 0;
    for (kind, schema) in
        [("runner.json", "runner.schema.json"), ("report.json", "report.schema.json"), ("report/", "service-report.schema.json")]
    {
        let v = validator(schema);
        for (rel, bytes) in files.iter().filter(|(rel, _)| is_kind(rel, kind)) {
            check(&v, rel, &serde_json::from_slice(bytes).unwrap());
            seen += 1;
        }
    }
    assert_eq!(seen, 29, "14 runner.json files, the report index and 14 agents' reports");
}

#[test]
fn example_descriptors_match_their_schemas() {
    let v1 = validator("descriptor-v1.schema.json");
    let v2 = validator("descriptor-v2.schema.json");
    let mut n = 0;
    for ex in ["trading-desk", "minimal"] {
        for (rel, bytes) in tree(&root().join("examples").join(ex)) {
            if !(rel.ends_with("describe.json") || rel.starts_with("descriptors/")) || rel.starts_with("expected/") {
                continue;
            }
            let d: Value = serde_json::from_slice(&bytes).unwrap();
            check(if d["version"] == 1 { &v1 } else { &v2 }, &rel, &d);
            n += 1;
        }
    }
    assert!(n >= 5);
    // And the schemas reject what clawc rejects.
    check(&v2, "sanity", &serde_json::json!({"version": 2, "tools": []}));
    assert!(
        !v2.is_valid(&serde_json::json!({"version": 2, "tools": [{"name": "t", "description": "d", "inputSchema": {"type": "object"}}]}))
    );
    assert!(!v1.is_valid(&serde_json::json!({"version": 1, "tools": []})));
}

/// clawc's verdict on one descriptor: `clawc describe` of it exits 0 (valid) or 2.
fn clawc_accepts(descriptor: &Value) -> bool {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("d.json"), serde_json::to_vec_pretty(descriptor).unwrap()).unwrap();
    let o = super::harness::clawc().current_dir(dir.path()).args(["describe", "d.json", "--format", "json"]).output().unwrap();
    match o.status.code() {
        Some(0) => true,
        Some(2) => false,
        other => panic!("clawc describe exited {other:?} on {descriptor}: {}", String::from_utf8_lossy(&o.stderr)),
    }
}

/// Field names clawc matches case-insensitively; the schema states them as spelt here.
const FIELDS: &[&str] = &[
    "version",
    "description",
    "feeds",
    "endpoints",
    "auth",
    "skill",
    "tools",
    "mcp",
    "memory",
    "name",
    "path",
    "ttl",
    "method",
    "type",
    "env",
    "transport",
    "inputSchema",
    "http",
    "annotations",
    "body",
    "body_key",
    "recall",
    "retain",
    "forget",
];

/// Whether every descriptor field (outside the free-form inputSchema and annotations) is
/// spelt as the schema spells it.
fn canonical(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().all(|(k, v)| {
            let spelt = !FIELDS.iter().any(|f| f.eq_ignore_ascii_case(k) && f != k);
            spelt && (k == "inputSchema" || k == "annotations" || canonical(v))
        }),
        Value::Array(items) => items.iter().all(canonical),
        _ => true,
    }
}

/// A version 2 descriptor, and one per element of it (each tool, feed, endpoint; auth,
/// memory, mcp), so that a file with many errors is compared error by error. `skill` is
/// left out: whether its file exists is not a question for a schema.
fn snippets(d: &Value) -> Vec<Value> {
    let Some(obj) = d.as_object() else { return vec![d.clone()] };
    let mut whole = obj.clone();
    whole.remove("skill");
    whole.insert("version".into(), 2.into());
    let mut out = vec![Value::Object(whole.clone())];
    let mut base = serde_json::Map::new();
    base.insert("version".into(), 2.into());
    for key in ["feeds", "endpoints", "tools"] {
        for item in obj.get(key).and_then(Value::as_array).into_iter().flatten() {
            let mut one = base.clone();
            if key == "tools"
                && let Some(mcp) = obj.get("mcp")
            {
                one.insert("mcp".into(), mcp.clone());
            }
            one.insert(key.into(), Value::Array(vec![item.clone()]));
            out.push(Value::Object(one));
        }
    }
    for key in ["auth", "memory", "mcp", "description"] {
        if let Some(v) = obj.get(key) {
            let mut one = base.clone();
            one.insert(key.into(), v.clone());
            out.push(Value::Object(one));
        }
    }
    out
}

/// Every descriptor file of the golden cases (`tests/cases`, `tests/describe`, the examples).
fn golden_descriptors() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for dir in ["tests/cases", "tests/describe", "examples"] {
        for (rel, bytes) in tree(&root().join(dir)) {
            if !rel.ends_with(".json") || rel.contains("/expected/") || rel.ends_with("claw-tools.json") {
                continue;
            }
            let Ok(v) = serde_json::from_slice::<Value>(&bytes) else { continue };
            if v.as_object().is_some_and(|o| o.keys().any(|k| k.eq_ignore_ascii_case("version"))) {
                out.push((format!("{dir}/{rel}"), v));
            }
        }
    }
    out
}

/// The published descriptor v2 schema accepts exactly what clawc accepts: every golden
/// descriptor (valid and invalid), whole and element by element, and a table of edge
/// cases, go through both. The few rules a JSON Schema cannot state are listed apart
/// (the schema's description names them): clawc must reject those, and the schema accept.
#[test]
fn the_descriptor_schema_agrees_with_clawc() {
    let v2 = validator("descriptor-v2.schema.json");
    let mut compared = 0;
    let mut disagree = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut check = |what: &str, d: &Value| {
        // Goldens repeat descriptors; each is run once.
        if !seen.insert(d.to_string()) {
            return;
        }
        let (schema, clawc) = (v2.is_valid(d), clawc_accepts(d));
        compared += 1;
        if schema != clawc {
            disagree.push(format!("{what}: schema {}, clawc {}: {d}", verdict(schema), verdict(clawc)));
        }
    };
    let goldens = golden_descriptors();
    assert!(goldens.iter().any(|(p, _)| p.contains("err-descriptor-v2")), "the golden descriptor error cases are found");
    for (path, d) in &goldens {
        // Non-canonical field names (`VERSION`, `inputschema`) are clawc's and Clawdapus'
        // case-insensitive matching, which the schema does not state.
        if !canonical(d) {
            continue;
        }
        for (i, s) in snippets(d).iter().enumerate() {
            check(&format!("{path} #{i}"), s);
        }
    }
    for (what, snippet, valid) in EDGES {
        let d: Value = serde_json::from_str(snippet).unwrap_or_else(|e| panic!("{what}: {e}"));
        check(what, &d);
        assert_eq!(clawc_accepts(&d), *valid, "{what}: clawc");
    }
    assert!(disagree.is_empty(), "the schema and clawc disagree on {} of {compared}:\n{}", disagree.len(), disagree.join("\n"));
    assert!(compared > 100, "{compared}");
    for (what, snippet) in INEXPRESSIBLE {
        let d: Value = serde_json::from_str(snippet).unwrap();
        assert!(v2.is_valid(&d) && !clawc_accepts(&d), "{what}: no longer a difference; move it to EDGES");
    }
}

fn verdict(valid: bool) -> &'static str {
    if valid { "accepts" } else { "rejects" }
}

/// (what, descriptor, whether clawc accepts it).
const EDGES: &[(&str, &str, bool)] = &[
    (
        "padded inputSchema.type",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":" Object "},"http":{"method":"GET","path":"/t"}}]}"#,
        false,
    ),
    (
        "capitalised inputSchema.type",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"OBJECT"},"http":{"method":"GET","path":"/t"}}]}"#,
        false,
    ),
    (
        "inputSchema.type list",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":["object"]},"http":{"method":"GET","path":"/t"}}]}"#,
        false,
    ),
    (
        "inputSchema invalid for its meta-schema",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object","required":"x"},"http":{"method":"GET","path":"/t"}}]}"#,
        false,
    ),
    (
        "draft-07 inputSchema",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0}}},"http":{"method":"GET","path":"/t"}}]}"#,
        true,
    ),
    (
        "draft-04 inputSchema",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true}}},"http":{"method":"GET","path":"/t"}}]}"#,
        true,
    ),
    (
        "draft-04 keyword under 2020-12",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true}}},"http":{"method":"GET","path":"/t"}}]}"#,
        false,
    ),
    (
        "unknown $schema",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"$schema":"https://example.com/mine","type":"object"},"http":{"method":"GET","path":"/t"}}]}"#,
        false,
    ),
    (
        "null fields are absent",
        r#"{"version":2,"description":null,"feeds":null,"endpoints":null,"auth":null,"skill":null,"tools":null,"mcp":null,"memory":null}"#,
        true,
    ),
    (
        "null mcp: tools need http",
        r#"{"version":2,"mcp":null,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"}}]}"#,
        false,
    ),
    (
        "null http under mcp",
        r#"{"version":2,"mcp":{},"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"http":null}]}"#,
        true,
    ),
    (
        "http under mcp",
        r#"{"version":2,"mcp":{},"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/t"}}]}"#,
        false,
    ),
    ("mcp transport in capitals", r#"{"version":2,"mcp":{"transport":" Streamable-HTTP "}}"#, true),
    ("mcp transport stdio", r#"{"version":2,"mcp":{"transport":"stdio"}}"#, false),
    ("blank mcp path", r#"{"version":2,"mcp":{"path":"  "}}"#, true),
    ("relative mcp path", r#"{"version":2,"mcp":{"path":"mcp"}}"#, false),
    (
        "body_key on GET",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"http":{"method":"get","path":"/t","body_key":"k"}}]}"#,
        false,
    ),
    (
        "body_key on patch",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"http":{"method":" patch ","path":"/t","body":" JSON ","body_key":"k"}}]}"#,
        true,
    ),
    (
        "blank body_key on GET",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/t","body_key":" "}}]}"#,
        true,
    ),
    (
        "terminalOnSuccess as a string",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/t"},"annotations":{"x-claw":{"terminalOnSuccess":"true"}}}]}"#,
        false,
    ),
    (
        "flat terminalOnSuccess as null",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/t"},"annotations":{"x-claw.terminalOnSuccess":null}}]}"#,
        false,
    ),
    (
        "x-claw annotation that is not an object",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/t"},"annotations":{"x-claw":"vendor"}}]}"#,
        true,
    ),
    ("memory with only a null recall", r#"{"version":2,"memory":{"recall":null,"forget":{"path":"/f"}}}"#, false),
    ("memory with a null recall and a retain", r#"{"version":2,"memory":{"recall":null,"retain":{"path":" /r"}}}"#, true),
    ("auth without type", r#"{"version":2,"auth":{"env":"TOKEN"}}"#, false),
    ("auth type in capitals", r#"{"version":2,"auth":{"type":" Bearer ","env":"TOKEN"}}"#, true),
    (
        "blank tool name",
        r#"{"version":2,"tools":[{"name":" ","description":"d","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/t"}}]}"#,
        false,
    ),
    ("feed with a blank path", r#"{"version":2,"feeds":[{"name":"f","path":" ","ttl":5}]}"#, false),
    ("feed with a null description", r#"{"version":2,"feeds":[{"name":"f","path":"/f","ttl":5,"description":null}]}"#, true),
    ("feed ttl zero", r#"{"version":2,"feeds":[{"name":"f","path":"/f","ttl":0}]}"#, false),
    ("endpoint with any verb", r#"{"version":2,"endpoints":[{"method":"trace","path":"/x"}]}"#, true),
];

/// What a JSON Schema cannot state, so the schema accepts and clawc rejects (each is
/// named in the schema's description).
const INEXPRESSIBLE: &[(&str, &str)] = &[
    ("version written as a float", r#"{"version":2.0}"#),
    ("ttl written as a float", r#"{"version":2,"feeds":[{"name":"f","path":"/f","ttl":5.0}]}"#),
    (
        "duplicate tool names",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/t"}},{"name":" t","description":"d","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/u"}}]}"#,
    ),
    (
        "a pattern that is no regex",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"a":{"type":"string","pattern":"(unclosed"}}},"http":{"method":"GET","path":"/t"}}]}"#,
    ),
    (
        "a draft-04 inputSchema invalid for draft 4",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","required":[]},"http":{"method":"GET","path":"/t"}}]}"#,
    ),
    (
        "a remote $ref",
        r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"a":{"$ref":"https://example.com/x.json"}}},"http":{"method":"GET","path":"/t"}}]}"#,
    ),
];
