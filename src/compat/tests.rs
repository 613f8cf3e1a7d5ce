//! The rules, table-driven: each case is an OLD/NEW pair of descriptors (decoded and
//! validated as `compile` decodes them) and the exact findings expected, as
//! `(rule, path)`. The no-change pairs of the specification are cases with no finding.
//! The `--pod` rules (`TOOL_GRANT_DANGLING`, `PRIVILEGE_ALL_GRANT_*`) need pods and are
//! tested in `tests/it/compat.rs`.

use super::compare::compare;
use super::model::Release;
use super::rules::{self, Handling, KEYWORDS};
use super::schema::{self, Dir};
use crate::describe::ServiceDescriptor;
use crate::origin::OriginKind;
use crate::sourcemap::SourceMap;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

fn release(doc: &Value) -> Release {
    let mut sources = SourceMap::default();
    let text = serde_json::to_string_pretty(doc).unwrap();
    let file = sources.add("d.json", text.clone());
    let (d, diags) = crate::describe::decode(file, sources.get(file));
    let descriptor = d.unwrap_or_else(|| panic!("{doc}: {:?}", diags.iter().map(|d| &d.message).collect::<Vec<_>>()));
    let mut sd = ServiceDescriptor {
        descriptor: descriptor.into(),
        file,
        origin: OriginKind::CommandLine,
        image: None,
        snapshot: None,
        skill: None,
    };
    Release::new("svc", &mut sd, ("d.json", Arc::from(text)), None)
}

fn found(old: &Value, new: &Value) -> Vec<(String, String)> {
    let mut f: Vec<(String, String)> =
        compare(&release(old), &release(new)).findings.into_iter().map(|f| (f.rule.id().to_string(), f.path)).collect();
    f.sort();
    f
}

/// An HTTP tool `t` with this input schema (and output schema, annotations).
fn tool(input: Value) -> Value {
    json!({"name": "t", "description": "T", "http": {"method": "POST", "path": "/t"}, "inputSchema": input})
}

fn desc(tools: Vec<Value>) -> Value {
    json!({"version": 2, "description": "S", "tools": tools})
}

fn obj(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

/// A descriptor whose one tool takes `{"x": <schema>}`.
fn input(x: Value) -> Value {
    desc(vec![tool(obj(json!({ "x": x })))])
}

/// A descriptor whose one tool returns `{"x": <schema>}` (required when `req`).
fn output(x: Value, req: bool) -> Value {
    let mut out = obj(json!({ "x": x }));
    if req {
        out["required"] = json!(["x"]);
    }
    let mut t = tool(obj(json!({"q": {"type": "string"}})));
    t["outputSchema"] = out;
    desc(vec![t])
}

fn annotated(a: Value) -> Value {
    let mut t = tool(obj(json!({"q": {"type": "string"}})));
    t["annotations"] = a;
    desc(vec![t])
}

struct Case {
    name: &'static str,
    old: Value,
    new: Value,
    want: &'static [(&'static str, &'static str)],
}

fn case(name: &'static str, old: Value, new: Value, want: &'static [(&'static str, &'static str)]) -> Case {
    Case { name, old, new, want }
}

const X: &str = "/inputSchema/properties/x";

fn cases() -> Vec<Case> {
    let s = |t: &str| json!({ "type": t });
    vec![
        // TOOL
        case(
            "tool removed",
            desc(vec![
                tool(obj(json!({"a": s("string")}))),
                json!({"name": "gone", "description": "G", "http": {"method": "GET", "path": "/g"}, "inputSchema": {"type": "object"}}),
            ]),
            desc(vec![tool(obj(json!({"a": s("string")})))]),
            &[("TOOL_REMOVED", "")],
        ),
        case(
            "tool renamed (same schema, one property)",
            desc(vec![
                json!({"name": "get_quote", "description": "Q", "http": {"method": "GET", "path": "/q"}, "inputSchema": obj(json!({"symbol": s("string")}))}),
            ]),
            desc(vec![
                json!({"name": "fetch_quote", "description": "Q", "http": {"method": "GET", "path": "/q"}, "inputSchema": obj(json!({"symbol": s("string")}))}),
            ]),
            &[("TOOL_RENAMED_LIKELY", "")],
        ),
        case(
            "parameterless tools never pair",
            desc(vec![
                json!({"name": "ping", "description": "P", "http": {"method": "GET", "path": "/p"}, "inputSchema": {"type": "object"}}),
            ]),
            desc(vec![
                json!({"name": "pong", "description": "P", "http": {"method": "GET", "path": "/p"}, "inputSchema": {"type": "object"}}),
            ]),
            &[("TOOL_ADDED", ""), ("TOOL_REMOVED", "")],
        ),
        case(
            "tool added",
            desc(vec![tool(obj(json!({})))]),
            desc(vec![
                tool(obj(json!({}))),
                json!({"name": "u", "description": "U", "http": {"method": "GET", "path": "/u"}, "inputSchema": {"type": "object"}}),
            ]),
            &[("TOOL_ADDED", "")],
        ),
        case(
            "description and title",
            desc(vec![tool(obj(json!({})))]),
            desc(vec![{
                let mut t = tool(obj(json!({})));
                t["description"] = json!("T, better");
                t["title"] = json!("Tee");
                t
            }]),
            &[("TOOL_DESCRIPTION_CHANGED", "/description"), ("TOOL_DESCRIPTION_CHANGED", "/title")],
        ),
        case(
            "annotation outside the privilege set",
            annotated(json!({"title": "a", "x-claw": {"terminalOnSuccess": false}})),
            annotated(json!({"title": "b", "x-claw": {"terminalOnSuccess": true}})),
            &[("TOOL_ANNOTATION_CHANGED", "/annotations/title"), ("TOOL_ANNOTATION_CHANGED", "/annotations/x-claw")],
        ),
        case(
            "service metadata",
            json!({"version": 2, "description": "A", "skill": "a.md"}),
            json!({"version": 2, "description": "B", "skill": "b.md"}),
            &[("SERVICE_METADATA_CHANGED", "/description"), ("SERVICE_METADATA_CHANGED", "/skill")],
        ),
        // TRANSPORT
        case(
            "http → mcp",
            desc(vec![tool(obj(json!({})))]),
            json!({"version": 2, "description": "S", "mcp": {"path": "/mcp"}, "tools": [{"name": "t", "description": "T", "inputSchema": {"type": "object", "properties": {}}}]}),
            &[("TRANSPORT_CHANGED", "/mcp")],
        ),
        case(
            "http method, path, body",
            desc(vec![tool(obj(json!({})))]),
            desc(vec![
                json!({"name": "t", "description": "T", "http": {"method": "PUT", "path": "/t/{id}", "body_key": "args"}, "inputSchema": obj(json!({}))}),
            ]),
            &[
                ("TRANSPORT_HTTP_BODY_CHANGED", "/http/body_key"),
                ("TRANSPORT_HTTP_METHOD_CHANGED", "/http/method"),
                ("TRANSPORT_HTTP_PATH_CHANGED", "/http/path"),
            ],
        ),
        case(
            "mcp path",
            json!({"version": 2, "description": "S", "mcp": {"path": "/mcp"}}),
            json!({"version": 2, "description": "S", "mcp": {"path": "/rpc"}}),
            &[("TRANSPORT_MCP_PATH_CHANGED", "/mcp/path")],
        ),
        case(
            "endpoints",
            json!({"version": 1, "description": "S", "endpoints": [{"method": "GET", "path": "/a"}]}),
            json!({"version": 1, "description": "S", "endpoints": [{"method": "GET", "path": "/b"}]}),
            &[("SERVICE_ENDPOINT_ADDED", "/endpoints/GET ~1b"), ("SERVICE_ENDPOINT_REMOVED", "/endpoints/GET ~1a")],
        ),
        // INPUT
        case(
            "property removed from a closed object",
            desc(vec![tool(json!({"type": "object", "additionalProperties": false, "properties": {"x": s("string"), "y": s("string")}}))]),
            desc(vec![tool(json!({"type": "object", "additionalProperties": false, "properties": {"y": s("string")}}))]),
            &[("INPUT_PROPERTY_REMOVED", X)],
        ),
        case(
            "property removed from an open object",
            input(s("string")),
            desc(vec![tool(obj(json!({})))]),
            &[("INPUT_PROPERTY_REMOVED_OPEN", X)],
        ),
        case("optional property added", desc(vec![tool(obj(json!({})))]), input(s("string")), &[("INPUT_PROPERTY_ADDED", X)]),
        case(
            "property newly required",
            input(s("string")),
            desc(vec![tool(json!({"type": "object", "properties": {"x": s("string")}, "required": ["x"]}))]),
            &[("INPUT_REQUIRED_ADDED", X)],
        ),
        case(
            "new required property, with a default",
            desc(vec![tool(obj(json!({})))]),
            desc(vec![tool(json!({"type": "object", "properties": {"x": {"type": "string", "default": "a"}}, "required": ["x"]}))]),
            &[("INPUT_REQUIRED_ADDED", X)],
        ),
        case(
            "required at depth",
            input(obj(json!({"y": s("string")}))),
            input(json!({"type": "object", "properties": {"y": s("string")}, "required": ["y"]})),
            &[("INPUT_REQUIRED_ADDED", "/inputSchema/properties/x/properties/y")],
        ),
        case(
            "no longer required",
            desc(vec![tool(json!({"type": "object", "properties": {"x": s("string")}, "required": ["x"]}))]),
            input(s("string")),
            &[("INPUT_REQUIRED_REMOVED", X)],
        ),
        case("number → integer", input(s("number")), input(s("integer")), &[("INPUT_TYPE_NARROWED", "/inputSchema/properties/x/type")]),
        case(
            "null dropped",
            input(json!({"type": ["string", "null"]})),
            input(s("string")),
            &[("INPUT_TYPE_NARROWED", "/inputSchema/properties/x/type")],
        ),
        case("type changed", input(s("string")), input(s("boolean")), &[("INPUT_TYPE_NARROWED", "/inputSchema/properties/x/type")]),
        case("integer → number", input(s("integer")), input(s("number")), &[("INPUT_TYPE_WIDENED", "/inputSchema/properties/x/type")]),
        case(
            "enum value removed",
            input(json!({"enum": ["a", "b", "c"]})),
            input(json!({"enum": ["a", "b"]})),
            &[("INPUT_ENUM_VALUE_REMOVED", "/inputSchema/properties/x/enum")],
        ),
        case(
            "enum introduced",
            input(s("string")),
            input(json!({"type": "string", "enum": ["a", "b"]})),
            &[("INPUT_ENUM_VALUE_REMOVED", "/inputSchema/properties/x/enum")],
        ),
        case(
            "enum value added",
            input(json!({"enum": ["a", "b"]})),
            input(json!({"enum": ["a", "b", "c"]})),
            &[("INPUT_ENUM_VALUE_ADDED", "/inputSchema/properties/x/enum")],
        ),
        case(
            "enum dropped",
            input(json!({"type": "string", "enum": ["a", "b"]})),
            input(s("string")),
            &[("INPUT_ENUM_VALUE_ADDED", "/inputSchema/properties/x/enum")],
        ),
        case(
            "const set",
            input(s("string")),
            input(json!({"type": "string", "const": "a"})),
            &[("INPUT_CONST_ADDED", "/inputSchema/properties/x/const")],
        ),
        case(
            "const changed",
            input(json!({"const": "a"})),
            input(json!({"const": "b"})),
            &[("INPUT_CONST_ADDED", "/inputSchema/properties/x/const")],
        ),
        case(
            "const dropped",
            input(json!({"type": "string", "const": "a"})),
            input(s("string")),
            &[("INPUT_CONST_REMOVED", "/inputSchema/properties/x/const")],
        ),
        case(
            "maximum lowered",
            input(json!({"type": "integer", "maximum": 100})),
            input(json!({"type": "integer", "maximum": 50})),
            &[("INPUT_CONSTRAINT_TIGHTENED", "/inputSchema/properties/x/maximum")],
        ),
        case(
            "minLength set",
            input(s("string")),
            input(json!({"type": "string", "minLength": 1})),
            &[("INPUT_CONSTRAINT_TIGHTENED", "/inputSchema/properties/x/minLength")],
        ),
        case(
            "multipleOf no longer dividing",
            input(json!({"type": "number", "multipleOf": 5})),
            input(json!({"type": "number", "multipleOf": 10})),
            &[("INPUT_CONSTRAINT_TIGHTENED", "/inputSchema/properties/x/multipleOf")],
        ),
        case(
            "uniqueItems set",
            input(s("array")),
            input(json!({"type": "array", "uniqueItems": true})),
            &[("INPUT_CONSTRAINT_TIGHTENED", "/inputSchema/properties/x/uniqueItems")],
        ),
        case(
            "minimum → exclusiveMinimum at the same value",
            input(json!({"type": "number", "minimum": 0})),
            input(json!({"type": "number", "exclusiveMinimum": 0})),
            &[("INPUT_CONSTRAINT_TIGHTENED", "/inputSchema/properties/x/exclusiveMinimum")],
        ),
        case(
            "multipleOf 10 → 5 loosens",
            input(json!({"type": "number", "multipleOf": 10})),
            input(json!({"type": "number", "multipleOf": 5})),
            &[("INPUT_CONSTRAINT_LOOSENED", "/inputSchema/properties/x/multipleOf")],
        ),
        case(
            "multipleOf 0.01 → 0.001 loosens exactly",
            input(json!({"type": "number", "multipleOf": 0.01})),
            input(json!({"type": "number", "multipleOf": 0.001})),
            &[("INPUT_CONSTRAINT_LOOSENED", "/inputSchema/properties/x/multipleOf")],
        ),
        case(
            "maxItems dropped",
            input(json!({"type": "array", "maxItems": 3})),
            input(s("array")),
            &[("INPUT_CONSTRAINT_LOOSENED", "/inputSchema/properties/x/maxItems")],
        ),
        case(
            "pattern removed",
            input(json!({"type": "string", "pattern": "^a"})),
            input(s("string")),
            &[("INPUT_CONSTRAINT_LOOSENED", "/inputSchema/properties/x/pattern")],
        ),
        case(
            "pattern added",
            input(s("string")),
            input(json!({"type": "string", "pattern": "^[A-Z]+$"})),
            &[("INPUT_PATTERN_ADDED", "/inputSchema/properties/x/pattern")],
        ),
        case(
            "pattern changed",
            input(json!({"type": "string", "pattern": "^[A-Z]+$"})),
            input(json!({"type": "string", "pattern": "^[A-Z]{1,5}$"})),
            &[("INPUT_PATTERN_CHANGED", "/inputSchema/properties/x/pattern")],
        ),
        case(
            "format added",
            input(s("string")),
            input(json!({"type": "string", "format": "date"})),
            &[("INPUT_FORMAT_CHANGED", "/inputSchema/properties/x/format")],
        ),
        case(
            "additionalProperties closed",
            desc(vec![tool(obj(json!({})))]),
            desc(vec![tool(json!({"type": "object", "properties": {}, "additionalProperties": false}))]),
            &[("INPUT_ADDITIONAL_PROPERTIES_CLOSED", "/inputSchema/additionalProperties")],
        ),
        case(
            "additionalProperties opened",
            desc(vec![tool(json!({"type": "object", "properties": {}, "additionalProperties": false}))]),
            desc(vec![tool(obj(json!({})))]),
            &[("INPUT_ADDITIONAL_PROPERTIES_OPENED", "/inputSchema/additionalProperties")],
        ),
        case(
            "anyOf branch removed",
            input(json!({"anyOf": [s("string"), s("integer")]})),
            input(json!({"anyOf": [s("string")]})),
            &[("INPUT_VARIANT_REMOVED", "/inputSchema/properties/x/anyOf/1")],
        ),
        case(
            "anyOf branch added",
            input(json!({"anyOf": [s("string"), s("integer")]})),
            input(json!({"anyOf": [s("string"), s("integer"), s("boolean")]})),
            &[("INPUT_VARIANT_ADDED", "/inputSchema/properties/x/anyOf/2")],
        ),
        case(
            "disjoint oneOf branch added",
            input(json!({"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]}]})),
            input(
                json!({"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}, "required": ["k"]}, {"type": "object", "properties": {"k": {"const": "b"}}, "required": ["k"]}]}),
            ),
            &[("INPUT_VARIANT_ADDED", "/inputSchema/properties/x/oneOf/1")],
        ),
        case(
            "overlapping oneOf branch added",
            input(json!({"oneOf": [s("string"), s("integer")]})),
            input(json!({"oneOf": [s("string"), s("integer"), s("number")]})),
            &[("INPUT_UNCLASSIFIED", "/inputSchema/properties/x/oneOf/2")],
        ),
        case(
            "anyOf branch modified",
            input(json!({"anyOf": [s("string"), s("integer")]})),
            input(json!({"anyOf": [s("string"), {"type": "integer", "minimum": 0}]})),
            &[("INPUT_UNCLASSIFIED", "/inputSchema/properties/x/anyOf")],
        ),
        case(
            "default changed",
            input(json!({"type": "string", "default": "a"})),
            input(json!({"type": "string", "default": "b"})),
            &[("INPUT_DEFAULT_CHANGED", "/inputSchema/properties/x/default")],
        ),
        case(
            "annotations inside the schema",
            input(json!({"type": "string", "description": "a", "examples": ["x"], "x-vendor": 1})),
            input(json!({"type": "string", "description": "b", "examples": ["y"], "x-vendor": 2})),
            &[
                ("INPUT_ANNOTATION_CHANGED", "/inputSchema/properties/x/description"),
                ("INPUT_ANNOTATION_CHANGED", "/inputSchema/properties/x/examples"),
                ("INPUT_ANNOTATION_CHANGED", "/inputSchema/properties/x/x-vendor"),
            ],
        ),
        case(
            "not changed",
            input(json!({"not": s("null")})),
            input(json!({"not": s("string")})),
            &[("INPUT_UNCLASSIFIED", "/inputSchema/properties/x/not")],
        ),
        case(
            "allOf that cannot be flattened",
            input(json!({"allOf": [{"minimum": 1}, {"maximum": 5}]})),
            input(json!({"allOf": [{"minimum": 1}, {"maximum": 6}]})),
            &[("INPUT_UNCLASSIFIED", "/inputSchema/properties/x/allOf")],
        ),
        case(
            "items recursed",
            input(json!({"type": "array", "items": s("number")})),
            input(json!({"type": "array", "items": s("integer")})),
            &[("INPUT_TYPE_NARROWED", "/inputSchema/properties/x/items/type")],
        ),
        case(
            "prefixItems by position",
            input(json!({"type": "array", "prefixItems": [s("string"), s("number")]})),
            input(json!({"type": "array", "prefixItems": [s("string"), s("integer")]})),
            &[("INPUT_TYPE_NARROWED", "/inputSchema/properties/x/prefixItems/1/type")],
        ),
        case(
            "additionalProperties schema recursed",
            input(json!({"type": "object", "additionalProperties": s("number")})),
            input(json!({"type": "object", "additionalProperties": s("integer")})),
            &[("INPUT_TYPE_NARROWED", "/inputSchema/properties/x/additionalProperties/type")],
        ),
        // OUTPUT
        case(
            "outputSchema removed",
            output(s("string"), false),
            {
                let mut d = output(s("string"), false);
                d["tools"][0].as_object_mut().unwrap().remove("outputSchema");
                d
            },
            &[("OUTPUT_SCHEMA_REMOVED", "/outputSchema")],
        ),
        case(
            "outputSchema added",
            desc(vec![tool(obj(json!({"q": s("string")})))]),
            output(s("string"), false),
            &[("OUTPUT_SCHEMA_ADDED", "/outputSchema")],
        ),
        case(
            "required result property removed",
            output(s("string"), true),
            {
                let mut d = output(s("string"), false);
                d["tools"][0]["outputSchema"] = json!({"type": "object", "properties": {}, "required": []});
                d
            },
            &[("OUTPUT_PROPERTY_REMOVED", "/outputSchema/properties/x")],
        ),
        case(
            "optional result property removed",
            output(s("string"), false),
            {
                let mut d = output(s("string"), false);
                d["tools"][0]["outputSchema"] = obj(json!({}));
                d
            },
            &[("OUTPUT_OPTIONAL_PROPERTY_REMOVED", "/outputSchema/properties/x")],
        ),
        case(
            "result property added",
            {
                let mut d = output(s("string"), false);
                d["tools"][0]["outputSchema"] = obj(json!({}));
                d
            },
            output(s("string"), false),
            &[("OUTPUT_PROPERTY_ADDED", "/outputSchema/properties/x")],
        ),
        case(
            "result property became optional",
            output(s("string"), true),
            output(s("string"), false),
            &[("OUTPUT_REQUIRED_REMOVED", "/outputSchema/properties/x")],
        ),
        case(
            "result property always present",
            output(s("string"), false),
            output(s("string"), true),
            &[("OUTPUT_REQUIRED_ADDED", "/outputSchema/properties/x")],
        ),
        case(
            "null may be returned",
            output(s("string"), true),
            output(json!({"anyOf": [s("string"), s("null")]}), true),
            &[("OUTPUT_TYPE_WIDENED", "/outputSchema/properties/x/type")],
        ),
        case(
            "fewer types returned",
            output(json!({"type": ["string", "integer"]}), true),
            output(s("string"), true),
            &[("OUTPUT_TYPE_NARROWED", "/outputSchema/properties/x/type")],
        ),
        case(
            "result enum value added",
            output(json!({"enum": ["a"]  , "type": "string", "maxLength": 3}), true),
            output(json!({"enum": ["a", "b"], "type": "string", "maxLength": 3}), true),
            &[("OUTPUT_CONST_REMOVED", "/outputSchema/properties/x/enum")],
        ),
        case(
            "result enum grows",
            output(json!({"enum": ["a", "b"]}), true),
            output(json!({"enum": ["a", "b", "c"]}), true),
            &[("OUTPUT_ENUM_VALUE_ADDED", "/outputSchema/properties/x/enum")],
        ),
        case(
            "result enum shrinks",
            output(json!({"enum": ["a", "b"]}), true),
            output(json!({"enum": ["a"]}), true),
            &[("OUTPUT_ENUM_VALUE_REMOVED", "/outputSchema/properties/x/enum")],
        ),
        case(
            "result const dropped",
            output(json!({"const": "ok"}), true),
            output(s("string"), true),
            &[("OUTPUT_CONST_REMOVED", "/outputSchema/properties/x/const"), ("OUTPUT_TYPE_NARROWED", "/outputSchema/properties/x/type")],
        ),
        case(
            "result bound relaxed",
            output(json!({"type": "integer", "maximum": 10}), true),
            output(json!({"type": "integer", "maximum": 20}), true),
            &[("OUTPUT_CONSTRAINT_LOOSENED", "/outputSchema/properties/x/maximum")],
        ),
        case(
            "result bound tightened, format added",
            output(json!({"type": "string"}), true),
            output(json!({"type": "string", "maxLength": 9, "format": "date"}), true),
            &[
                ("OUTPUT_CONSTRAINT_TIGHTENED", "/outputSchema/properties/x/format"),
                ("OUTPUT_CONSTRAINT_TIGHTENED", "/outputSchema/properties/x/maxLength"),
            ],
        ),
        case(
            "result pattern changed",
            output(json!({"type": "string", "pattern": "^a"}), true),
            output(json!({"type": "string", "pattern": "^b"}), true),
            &[("OUTPUT_STRING_FORMAT_CHANGED", "/outputSchema/properties/x/pattern")],
        ),
        case(
            "result object opened",
            output(json!({"type": "object", "additionalProperties": false}), true),
            output(json!({"type": "object"}), true),
            &[("OUTPUT_ADDITIONAL_PROPERTIES_OPENED", "/outputSchema/properties/x/additionalProperties")],
        ),
        case(
            "result object closed",
            output(json!({"type": "object"}), true),
            output(json!({"type": "object", "additionalProperties": false}), true),
            &[("OUTPUT_ADDITIONAL_PROPERTIES_CLOSED", "/outputSchema/properties/x/additionalProperties")],
        ),
        case(
            "result branch added",
            output(json!({"anyOf": [s("string"), s("integer")]}), true),
            output(json!({"anyOf": [s("string"), s("integer"), s("boolean")]}), true),
            &[("OUTPUT_VARIANT_ADDED", "/outputSchema/properties/x/anyOf/2")],
        ),
        case(
            "result branch removed",
            output(json!({"oneOf": [s("string"), s("integer"), s("boolean")]}), true),
            output(json!({"oneOf": [s("string"), s("integer")]}), true),
            &[("OUTPUT_VARIANT_REMOVED", "/outputSchema/properties/x/oneOf/2")],
        ),
        case(
            "result annotation and default",
            output(json!({"type": "string", "default": "a", "title": "x"}), true),
            output(json!({"type": "string", "default": "b", "title": "y"}), true),
            &[
                ("OUTPUT_ANNOTATION_CHANGED", "/outputSchema/properties/x/default"),
                ("OUTPUT_ANNOTATION_CHANGED", "/outputSchema/properties/x/title"),
            ],
        ),
        case(
            "result if/then changed",
            output(json!({"if": s("string"), "then": {"minLength": 1}}), true),
            output(json!({"if": s("string"), "then": {"minLength": 2}}), true),
            &[("OUTPUT_UNCLASSIFIED", "/outputSchema/properties/x/then")],
        ),
        // PRIVILEGE
        case(
            "Clawdapus readOnly cleared",
            annotated(json!({"readOnly": true})),
            annotated(json!({})),
            &[("PRIVILEGE_READONLY_CLEARED", "/annotations/readOnly")],
        ),
        case(
            "readOnlyHint cleared",
            annotated(json!({"readOnlyHint": true})),
            annotated(json!({"readOnlyHint": false, "destructiveHint": false})),
            &[("PRIVILEGE_READONLY_HINT_CLEARED", "/annotations/readOnlyHint")],
        ),
        case(
            "explicit destructiveHint false dropped",
            annotated(json!({"destructiveHint": false})),
            annotated(json!({})),
            &[("PRIVILEGE_DESTRUCTIVE_HINT_SET", "/annotations/destructiveHint")],
        ),
        case(
            "explicit openWorldHint false dropped",
            annotated(json!({"openWorldHint": false})),
            annotated(json!({})),
            &[("PRIVILEGE_OPEN_WORLD_HINT_SET", "/annotations/openWorldHint")],
        ),
        case(
            "idempotentHint cleared",
            annotated(json!({"idempotentHint": true})),
            annotated(json!({"idempotentHint": false})),
            &[("PRIVILEGE_IDEMPOTENT_HINT_CLEARED", "/annotations/idempotentHint")],
        ),
        case(
            "read-only set",
            annotated(json!({})),
            annotated(json!({"readOnlyHint": true})),
            &[("PRIVILEGE_REDUCED", "/annotations/readOnlyHint")],
        ),
        case(
            "destructive and open-world cleared",
            annotated(json!({})),
            annotated(json!({"destructiveHint": false, "openWorldHint": false})),
            &[("PRIVILEGE_REDUCED", "/annotations/destructiveHint"), ("PRIVILEGE_REDUCED", "/annotations/openWorldHint")],
        ),
        // FEED
        case(
            "feed removed",
            json!({"version": 1, "description": "S", "feeds": [{"name": "a", "path": "/a", "ttl": 5}]}),
            json!({"version": 1, "description": "S"}),
            &[("FEED_REMOVED", "/feeds/a")],
        ),
        case(
            "feed renamed",
            json!({"version": 1, "description": "S", "feeds": [{"name": "a", "path": "/a", "ttl": 5}]}),
            json!({"version": 1, "description": "S", "feeds": [{"name": "b", "path": "/a", "ttl": 5}]}),
            &[("FEED_RENAMED_LIKELY", "/feeds/a")],
        ),
        case(
            "feed added",
            json!({"version": 1, "description": "S"}),
            json!({"version": 1, "description": "S", "feeds": [{"name": "a", "path": "/a", "ttl": 5}]}),
            &[("FEED_ADDED", "/feeds/a")],
        ),
        case(
            "feed path and ttl",
            json!({"version": 1, "description": "S", "feeds": [{"name": "a", "path": "/a", "ttl": 5}]}),
            json!({"version": 1, "description": "S", "feeds": [{"name": "a", "path": "/b", "ttl": 6}]}),
            &[("FEED_PATH_CHANGED", "/feeds/a/path"), ("FEED_TTL_CHANGED", "/feeds/a/ttl")],
        ),
        // MEMORY
        case(
            "memory op removed, path changed, op added",
            json!({"version": 2, "description": "S", "memory": {"recall": {"path": "/r"}, "retain": {"path": "/w"}}}),
            json!({"version": 2, "description": "S", "memory": {"recall": {"path": "/r2"}, "forget": {"path": "/f"}}}),
            &[
                ("MEMORY_OP_ADDED", "/memory/forget"),
                ("MEMORY_OP_REMOVED", "/memory/retain"),
                ("MEMORY_PATH_CHANGED", "/memory/recall/path"),
            ],
        ),
        case(
            "memory block removed",
            json!({"version": 2, "description": "S", "memory": {"recall": {"path": "/r"}}}),
            json!({"version": 2, "description": "S"}),
            &[("MEMORY_OP_REMOVED", "/memory")],
        ),
        // AUTH
        case(
            "auth type",
            json!({"version": 1, "description": "S", "auth": {"type": "bearer", "env": "T"}}),
            json!({"version": 1, "description": "S"}),
            &[("AUTH_TYPE_CHANGED", "/auth/type")],
        ),
        case(
            "bearer env renamed",
            json!({"version": 1, "description": "S", "auth": {"type": "bearer", "env": "T"}}),
            json!({"version": 1, "description": "S", "auth": {"type": "bearer", "env": "U"}}),
            &[("AUTH_ENV_CHANGED", "/auth/env")],
        ),
        // VERSION
        case(
            "breaking without a major bump",
            json!({"version": 1, "description": "S", "release": "1.2.0", "feeds": [{"name": "a", "path": "/a", "ttl": 5}]}),
            json!({"version": 1, "description": "S", "release": "1.3.0"}),
            &[("FEED_REMOVED", "/feeds/a"), ("VERSION_NOT_BUMPED", "/release")],
        ),
        case(
            "breaking with a major bump",
            json!({"version": 1, "description": "S", "release": "1.2.0", "feeds": [{"name": "a", "path": "/a", "ttl": 5}]}),
            json!({"version": 1, "description": "S", "release": "2.0.0"}),
            &[("FEED_REMOVED", "/feeds/a")],
        ),
        case(
            "below 1.0.0 a minor bump is enough",
            json!({"version": 1, "description": "S", "release": "0.2.0", "feeds": [{"name": "a", "path": "/a", "ttl": 5}]}),
            json!({"version": 1, "description": "S", "release": "0.3.0"}),
            &[("FEED_REMOVED", "/feeds/a")],
        ),
        case(
            "format version",
            json!({"version": 1, "description": "S"}),
            json!({"version": 2, "description": "S"}),
            &[("VERSION_FORMAT_CHANGED", "/version")],
        ),
        // No change (specification, section 2)
        case(
            "keys reordered",
            json!({"version": 2, "description": "S", "tools": [{"name": "t", "description": "T", "http": {"method": "GET", "path": "/t"}, "inputSchema": {"type": "object", "properties": {"a": s("string"), "b": s("string")}}}]}),
            json!({"tools": [{"inputSchema": {"properties": {"b": s("string"), "a": s("string")}, "type": "object"}, "http": {"path": "/t", "method": "GET"}, "description": "T", "name": "t"}], "description": "S", "version": 2}),
            &[],
        ),
        case(
            "required and enum reordered",
            desc(vec![tool(
                json!({"type": "object", "properties": {"a": {"enum": ["x", "y", 1]}, "b": s("string")}, "required": ["a", "b"]}),
            )]),
            desc(vec![tool(
                json!({"type": "object", "properties": {"a": {"enum": [1, "y", "x"]}, "b": s("string")}, "required": ["b", "a"]}),
            )]),
            &[],
        ),
        case(
            "a property moved behind a local $ref",
            input(json!({"type": "object", "properties": {"n": s("integer")}, "required": ["n"]})),
            desc(vec![tool(
                json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": {"X": {"type": "object", "properties": {"n": s("integer")}, "required": ["n"]}}}),
            )]),
            &[],
        ),
        case(
            "an unreferenced $defs entry changed",
            desc(vec![tool(json!({"type": "object", "properties": {}, "$defs": {"u": s("string")}}))]),
            desc(vec![tool(json!({"type": "object", "properties": {}, "$defs": {"u": s("integer")}}))]),
            &[],
        ),
        case(
            "[T, null] ≡ nullable anyOf",
            input(json!({"type": ["string", "null"]})),
            input(json!({"anyOf": [s("string"), s("null")]})),
            &[],
        ),
        case("one-value enum ≡ const", input(json!({"enum": ["a"]})), input(json!({"const": "a"})), &[]),
        case(
            "allOf of objects ≡ flattened",
            input(
                json!({"allOf": [{"type": "object", "properties": {"a": s("string")}, "required": ["a"]}, {"type": "object", "properties": {"b": s("string")}}]}),
            ),
            input(json!({"type": "object", "properties": {"a": s("string"), "b": s("string")}, "required": ["a"]})),
            &[],
        ),
        case(
            "anyOf branches reordered",
            input(json!({"anyOf": [s("string"), s("integer")]})),
            input(json!({"anyOf": [s("integer"), s("string")]})),
            &[],
        ),
        case("type array reordered", input(json!({"type": ["string", "integer"]})), input(json!({"type": ["integer", "string"]})), &[]),
        case(
            "equal decimals",
            input(json!({"type": "number", "multipleOf": 0.10, "maximum": 1.0})),
            input(json!({"type": "number", "multipleOf": 0.1, "maximum": 1})),
            &[],
        ),
        case(
            "spelling-only edits",
            desc(vec![
                json!({"name": " t ", "description": "T", "http": {"method": "post", "path": "/t", "body": "JSON"}, "inputSchema": obj(json!({}))}),
            ]),
            desc(vec![
                json!({"name": "t", "description": "T", "http": {"method": "POST", "path": "/t", "body": "json"}, "inputSchema": obj(json!({}))}),
            ]),
            &[],
        ),
        case(
            "mcp transport spellings and default path",
            json!({"version": 2, "description": "S", "mcp": {"transport": "streamable-http"}}),
            json!({"version": 2, "description": "S", "mcp": {"transport": "streamable_http", "path": "/mcp"}}),
            &[],
        ),
        case(
            "hints that do not change effective values",
            annotated(json!({"readOnlyHint": true, "destructiveHint": true})),
            annotated(json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": true})),
            &[],
        ),
        case(
            "auth absent ≡ none",
            json!({"version": 1, "description": "S"}),
            json!({"version": 1, "description": "S", "auth": {"type": "none"}}),
            &[],
        ),
    ]
}

#[test]
fn every_case_finds_exactly_what_it_expects() {
    let mut failures = Vec::new();
    for c in cases() {
        let got = found(&c.old, &c.new);
        let mut want: Vec<(String, String)> = c.want.iter().map(|(r, p)| ((*r).to_string(), (*p).to_string())).collect();
        want.sort();
        if got != want {
            failures.push(format!("{}:\n   want {want:?}\n   got  {got:?}", c.name));
        }
        // Comparing a release with itself finds nothing.
        let same = found(&c.new, &c.new);
        if !same.is_empty() {
            failures.push(format!("{}: NEW against itself: {same:?}", c.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every rule of the catalogue has a case (the pod rules have theirs in tests/it).
#[test]
fn every_rule_has_a_case() {
    let pod_rules = ["TOOL_GRANT_DANGLING", "PRIVILEGE_ALL_GRANT_GAINS_WRITE_TOOL", "PRIVILEGE_ALL_GRANT_GAINS_TOOL"];
    let covered: BTreeSet<&str> = cases().iter().flat_map(|c| c.want.iter().map(|(r, _)| *r)).collect();
    let missing: Vec<&str> = rules::ALL.iter().map(|r| r.id()).filter(|id| !covered.contains(id) && !pod_rules.contains(id)).collect();
    assert!(missing.is_empty(), "rules without a case: {missing:?}");
    for r in &covered {
        assert!(rules::RuleRef::find(r).is_some(), "{r} is not a rule");
    }
}

#[test]
fn the_catalogue_has_78_unique_rules() {
    assert_eq!(rules::ALL.len(), 78);
    let ids: BTreeSet<&str> = rules::ALL.iter().map(|r| r.id()).collect();
    assert_eq!(ids.len(), 78);
}

/// The keywords of the JSON Schema 2020-12 meta-schemas (core, applicator, unevaluated,
/// validation, meta-data, format-annotation, content, and the deprecated keywords
/// `schema.json` still defines), as written in them.
const META_2020_12: &[&str] = &[
    // meta/core
    "$id",
    "$schema",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    // meta/applicator
    "prefixItems",
    "items",
    "contains",
    "additionalProperties",
    "properties",
    "patternProperties",
    "dependentSchemas",
    "propertyNames",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    // meta/unevaluated
    "unevaluatedItems",
    "unevaluatedProperties",
    // meta/validation
    "type",
    "const",
    "enum",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    // meta/meta-data
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    // meta/format-annotation
    "format",
    // meta/content
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    // schema (deprecated, kept for compatibility)
    "definitions",
    "dependencies",
    "$recursiveAnchor",
    "$recursiveRef",
];

#[test]
fn every_2020_12_keyword_is_classified() {
    let unclassified: Vec<&str> = META_2020_12.iter().copied().filter(|k| rules::handling(k).is_none()).collect();
    assert!(unclassified.is_empty(), "keywords with no row in rules::KEYWORDS: {unclassified:?}");
    let known: BTreeSet<&str> = KEYWORDS.iter().map(|(k, _)| *k).collect();
    assert_eq!(known.len(), KEYWORDS.len(), "a keyword is listed twice");
}

/// Every keyword classified unclassified is reported as such when it changes.
#[test]
fn unclassified_keywords_are_never_silent() {
    for (k, h) in KEYWORDS {
        if *h != Handling::Unclassified {
            continue;
        }
        let old = json!({ *k: {"type": "string"} });
        let new = json!({ *k: {"type": "integer"} });
        for (dir, rule) in [(Dir::In, rules::INPUT_UNCLASSIFIED), (Dir::Out, rules::OUTPUT_UNCLASSIFIED)] {
            let got = schema::compare(&old, &new, dir).findings;
            assert!(got.iter().any(|f| f.rule == rule), "{k}: {got:?}");
        }
    }
}

#[test]
fn cyclic_refs_terminate_and_are_compared_at_the_use_site() {
    let tree = |leaf: &str| {
        json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}, "$defs": {"node": {"type": "object", "properties": {
            "value": {"type": leaf}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}})
    };
    assert!(schema::compare(&tree("number"), &tree("number"), Dir::In).findings.is_empty());
    let got = schema::compare(&tree("number"), &tree("integer"), Dir::In);
    let paths: Vec<String> = got.findings.iter().map(|f| schema::pointer(&f.path)).collect();
    assert_eq!(paths, ["/properties/root/properties/value/type"]);
    // A ref cycle with no structure between (`a` → `b` → `a`) ends too.
    let loopy = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "properties": {"x": {"$ref": "#/$defs/a"}}});
    let _ = schema::compare(&loopy, &json!({"properties": {"x": {"type": "string"}}}), Dir::In);
    let _ = schema::canonical(&loopy, &loopy);
}

#[test]
fn deep_and_exponential_schemas_are_bounded() {
    let mut deep = json!({"type": "string"});
    for _ in 0..200 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    let mut deeper = deep.clone();
    deeper["properties"]["a"]["type"] = json!("array");
    let got = schema::compare(&deep, &deeper, Dir::In);
    assert!(got.limited.is_none(), "the change is near the top");
    let mut leaf_changed = json!({"type": "integer"});
    for _ in 0..200 {
        leaf_changed = json!({"type": "object", "properties": {"a": leaf_changed}});
    }
    let got = schema::compare(&deep, &leaf_changed, Dir::In);
    assert!(got.limited.is_some());
    assert!(got.findings.iter().any(|f| f.rule == rules::INPUT_UNCLASSIFIED));
    // Each definition uses the next twice: 2^40 paths in a few hundred bytes.
    let fan = |leaf: &str| {
        let mut defs = serde_json::Map::new();
        for i in 0..40 {
            let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
            defs.insert(format!("d{i}"), json!({"type": "object", "properties": {"l": next.clone(), "r": next}}));
        }
        defs.insert("d40".into(), json!({"type": leaf}));
        json!({"$ref": "#/$defs/d0", "$defs": defs})
    };
    let start = std::time::Instant::now();
    let got = schema::compare(&fan("string"), &fan("integer"), Dir::In);
    assert!(got.limited.is_some());
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "{:?}", start.elapsed());
    let _ = schema::canonical(&fan("string"), &fan("string"));
}

#[test]
fn fingerprints_are_stable() {
    // The same on every machine and every run: never over a line number.
    let fp = super::fingerprint(rules::TOOL_REMOVED, "trading-api", Some("legacy_quote"), "");
    assert_eq!(fp, super::fingerprint(rules::TOOL_REMOVED, "trading-api", Some("legacy_quote"), ""));
    assert_eq!(fp.len(), 32);
    assert_eq!(fp, crate::digest::sha256_hex(b"TOOL_REMOVED\0trading-api\0legacy_quote\0")[..32]);
    assert_ne!(fp, super::fingerprint(rules::TOOL_REMOVED, "trading-api", Some("legacy_quote"), "/x"));
}

/// `docs/compat-rules.md` is rendered from the table; `UPDATE_GOLDEN=1 cargo test --lib
/// compat::tests::rules_doc` rewrites it.
#[test]
fn rules_doc_is_current() {
    crate::generated_doc::assert_current(
        "docs/compat-rules.md",
        None,
        &rules::markdown(),
        "UPDATE_GOLDEN=1 cargo test --lib compat::tests::rules_doc",
    );
}
