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
    for other in ["descriptor-v1.schema.json", "report.schema.json"] {
        registry = registry.add(format!("https://clawdapus.dev/schemas/clawc/{other}"), load(other)).unwrap();
    }
    let registry = registry.prepare().unwrap();
    jsonschema::options().with_registry(&registry).build(&schema).unwrap_or_else(|e| panic!("{name}: {e}"))
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
    ] {
        let v = validator(schema);
        for (rel, bytes) in files.iter().filter(|(rel, _)| rel.ends_with(kind)) {
            check(&v, rel, &serde_json::from_slice(bytes).unwrap());
            *seen.entry(kind).or_default() += 1;
        }
    }
    assert_eq!(seen.len(), 4, "every artifact kind is covered: {seen:?}");
}

/// Native agents' `runner.json` and a report with native grants (the native golden case).
#[test]
fn runner_files_match_their_schemas() {
    let files = tree(&root().join("tests/cases/native-runners/expected/out"));
    let mut seen = 0;
    for (kind, schema) in [("runner.json", "runner.schema.json"), ("report.json", "report.schema.json")] {
        let v = validator(schema);
        for (rel, bytes) in files.iter().filter(|(rel, _)| rel.ends_with(kind)) {
            check(&v, rel, &serde_json::from_slice(bytes).unwrap());
            seen += 1;
        }
    }
    assert_eq!(seen, 15, "14 runner.json files and the report");
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
