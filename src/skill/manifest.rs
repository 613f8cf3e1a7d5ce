//! `tool-manifest.yaml` (the Dynamic Skill Tools design): dynamic tools with a script or
//! HTTP executor, read with the project's bounded YAML reader so every diagnostic points
//! at the manifest's line and column.
//!
//! ```yaml
//! version: 1
//! runtime:
//!   default_timeout_sec: 20
//!   default_retry: {max_attempts: 3, backoff_ms: 250}
//! tools:
//!   - name: get_weather
//!     description: Current weather for a city
//!     input_schema: {type: object, properties: {city: {type: string}}, required: [city]}
//!     executor: {type: script, entry: scripts/weather.py, args_template: "--city {{ city }}"}
//!     retry: {max_attempts: 5}
//!   - name: search
//!     description: Search the catalogue
//!     parameters: {type: object, properties: {q: {type: string}}}      # alias of input_schema
//!     endpoint: "https://api.example.com/search?q={{ q }}"             # tool-level url
//! ```
//!
//! Aliases: `parameters` → `input_schema`; `script` → `entry` (in `executor`, or at tool
//! level where it means `executor: {type: script, entry: …}`); `endpoint` → `url` (likewise,
//! `executor: {type: http, url: …}`). Giving a field and its alias is an error of that tool.
//! The executor `type` may be left out when `entry` or `url` says it.
//!
//! Manifest-level faults (not YAML, not a mapping, `tools` missing or not a list, a bad
//! `runtime` default) are errors: nothing is compiled. A tool that breaks a rule is a
//! warning and is skipped; of two tools with one name the first is kept.

use super::files::SkillDir;
use super::policy::{self, Effective, Origins, Partial};
use super::{InvalidTool, ToolProblems, codes, names, template};
use crate::describe::schema;
use crate::diag::Diagnostic;
use crate::sourcemap::{Loc, SourceMap};
use crate::yaml::{self, Kind, Node};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// How a dynamic tool runs, as `dynamic_tools.json` writes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum Executor {
    /// A script of the skill folder, run with the folder as its working directory.
    Script {
        /// Folder-relative, normalised.
        entry: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        args_template: Option<String>,
    },
    /// An HTTP request.
    Http {
        /// Upper case.
        method: String,
        url: String,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        headers_template: BTreeMap<String, String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        body_template: Option<String>,
    },
}

impl Executor {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Executor::Script { .. } => "script",
            Executor::Http { .. } => "http",
        }
    }
}

/// A valid dynamic tool, normalised: aliases resolved, defaults applied.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct DynamicTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub executor: Executor,
    pub timeout_sec: u64,
    pub retry: policy::Retry,
    /// Where the timeout and retry fields came from.
    #[serde(skip)]
    pub origins: Origins,
    /// Where the tool is declared (its `name`).
    #[serde(skip)]
    pub loc: Loc,
}

/// A manifest as loaded.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Manifest {
    /// `version` as written, when given.
    pub version: Option<String>,
    /// The runtime defaults.
    pub runtime: Partial,
    pub tools: Vec<DynamicTool>,
    pub invalid: Vec<InvalidTool>,
}

const ROOT_KEYS: &[&str] = &["version", "runtime", "tools"];
const RUNTIME_KEYS: &[&str] = &["default_timeout_sec", "default_retry"];
const TOOL_KEYS: &[&str] = &["name", "description", "input_schema", "parameters", "executor", "script", "endpoint", "timeout_sec", "retry"];
const EXECUTOR_KEYS: &[&str] =
    &["type", "entry", "script", "args_template", "method", "url", "endpoint", "headers_template", "body_template"];
/// Executor fields that are not accepted at tool level (only `script` and `endpoint` are).
const EXECUTOR_ONLY: &[&str] = &["entry", "args_template", "method", "url", "headers_template", "body_template"];
const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// Loads `tool-manifest.yaml` from `dir`. `None` when it cannot be compiled; the
/// diagnostics say why and hold every tool warning.
pub(crate) fn load(dir: &SkillDir, sources: &mut SourceMap) -> (Option<Manifest>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let shown = dir.shown(super::TOOL_MANIFEST);
    let text = match dir.read_text(super::TOOL_MANIFEST) {
        Ok(Some(t)) => t,
        Ok(None) => {
            let d = Diagnostic::error(crate::source::diags::MISSING, format!("`{shown}` does not exist"))
                .help("a skill's dynamic tools are declared in tool-manifest.yaml at the root of its folder");
            return (None, vec![d]);
        }
        Err(d) => return (None, vec![d]),
    };
    let file = sources.add(shown.clone(), text);
    let root = match yaml::parse(file, sources.get(file)) {
        Ok(r) => r,
        Err(ds) => return (None, ds),
    };
    let err = |msg: String, loc: Loc, help: &str| Diagnostic::error(codes::INVALID_MANIFEST, msg).at(loc).help(help.to_string());
    let Some(entries) = root.as_map() else {
        let d = err(
            format!("`{shown}` is {}, not a mapping with `tools`", root.kind_name()),
            root.loc,
            "a manifest is a mapping: version, runtime, tools",
        );
        return (None, vec![d]);
    };
    for (k, _) in entries {
        let key = k.as_str().unwrap_or("?");
        if !ROOT_KEYS.contains(&key) {
            let help = crate::diag::suggest(key, ROOT_KEYS.iter().copied(), "a manifest holds version, runtime and tools");
            diags.push(
                Diagnostic::warning(
                    codes::INVALID_MANIFEST,
                    format!("unknown key `{}` in `{shown}` is ignored", crate::diag::printable(key)),
                )
                .at(k.loc)
                .help(help),
            );
        }
    }
    let version = match root.get("version") {
        None => None,
        Some(v) if v.is_null() => None,
        Some(v) => match v.as_str() {
            Some(s) if v.as_map().is_none() && v.as_seq().is_none() => Some(s.to_string()),
            _ => {
                diags.push(err(format!("`version` must be a number or a string, not {}", v.kind_name()), v.loc, "write version: 1"));
                None
            }
        },
    };
    let mut runtime = Partial::default();
    if let Some(rt) = root.get("runtime").filter(|r| !r.is_null()) {
        runtime_defaults(rt, &shown, &mut runtime, &mut diags);
    }
    let tools = match root.get("tools") {
        Some(t) => match t.as_seq() {
            Some(items) => items,
            None if t.is_null() => &[][..],
            None => {
                diags.push(err(
                    format!("`tools` must be a list of tools, not {}", t.kind_name()),
                    t.loc,
                    "write tools as a list: `tools:` then `- name: …` items",
                ));
                return (None, diags);
            }
        },
        None => {
            diags.push(err(format!("`{shown}` has no `tools` list"), root.loc, "declare the dynamic tools under `tools:`"));
            return (None, diags);
        }
    };
    if tools.len() > super::MAX_TOOLS {
        diags.push(err(
            format!("`{shown}` declares {} tools; the limit is {}", tools.len(), super::MAX_TOOLS),
            root.loc,
            "split the tools over several skills",
        ));
        return (None, diags);
    }
    if diags.iter().any(Diagnostic::is_error) {
        return (None, diags);
    }
    let mut seen: BTreeMap<String, (usize, Loc)> = BTreeMap::new();
    let mut budget = schema::PATTERN_BUDGET;
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    let mut tool_diags = Vec::new();
    for (i, node) in tools.iter().enumerate() {
        let mut problems = ToolProblems::new(i);
        let tool = check_tool(dir, node, i, runtime, &mut seen, &mut budget, &mut problems);
        match (problems.finish(&mut tool_diags), tool) {
            (Some(bad), _) => invalid.push(bad),
            (None, Some(t)) => valid.push(t),
            (None, None) => {}
        }
    }
    diags.extend(crate::diag::cap(tool_diags));
    (Some(Manifest { version, runtime, tools: valid, invalid }), diags)
}

/// `runtime:`: `default_timeout_sec` and `default_retry` (errors), other keys (warnings).
fn runtime_defaults(rt: &Node, shown: &str, into: &mut Partial, diags: &mut Vec<Diagnostic>) {
    let help =
        "runtime defaults: default_timeout_sec (seconds, 1 to 3600) and default_retry: {max_attempts: 1 to 10, backoff_ms: 0 to 600000}";
    let Some(entries) = rt.as_map() else {
        diags.push(
            Diagnostic::error(codes::INVALID_MANIFEST, format!("`runtime` must be a mapping, not {}", rt.kind_name()))
                .at(rt.loc)
                .help(help),
        );
        return;
    };
    for (k, v) in entries {
        match k.as_str() {
            Some("default_timeout_sec") => match policy::int(v, "runtime.default_timeout_sec", policy::TIMEOUT_SEC) {
                Ok(n) => into.timeout_sec = Some(n),
                Err((m, loc)) => diags.push(Diagnostic::error(codes::INVALID_MANIFEST, m).at(loc).help(help)),
            },
            Some("default_retry") => {
                for (m, loc) in policy::retry(v, "runtime.default_retry", into) {
                    diags.push(Diagnostic::error(codes::INVALID_MANIFEST, m).at(loc).help(help));
                }
            }
            other => {
                let key = other.unwrap_or("?");
                let h = crate::diag::suggest(key, RUNTIME_KEYS.iter().copied(), help);
                let msg = format!("unknown key `runtime.{}` in `{shown}` is ignored", crate::diag::printable(key));
                diags.push(Diagnostic::warning(codes::INVALID_MANIFEST, msg).at(k.loc).help(h));
            }
        }
    }
}

/// A string-valued scalar (any scalar's text; a number is its digits).
fn scalar(node: &Node) -> Option<&str> {
    match &node.kind {
        Kind::Scalar { text, .. } if !node.is_null() => Some(text),
        _ => None,
    }
}

/// Checks tool `i`; its problems go to `problems`. The tool, normalised, when it has none.
fn check_tool(
    dir: &SkillDir,
    node: &Node,
    i: usize,
    runtime: Partial,
    seen: &mut BTreeMap<String, (usize, Loc)>,
    budget: &mut usize,
    problems: &mut ToolProblems,
) -> Option<DynamicTool> {
    let Some(entries) = node.as_map() else {
        problems.add(
            "shape",
            format!("tools[{i}] is {}, not a mapping", node.kind_name()),
            node.loc,
            "each tool is a mapping with name, description, input_schema and executor",
        );
        return None;
    };
    let name_node = node.get("name");
    if let Some(n) = name_node.and_then(scalar) {
        problems.named(n);
    }
    for (k, _) in entries {
        let key = k.as_str().unwrap_or("?");
        if TOOL_KEYS.contains(&key) {
            continue;
        }
        if EXECUTOR_ONLY.contains(&key) {
            let msg = format!("`{key}` is a field of `executor`, not of the tool");
            problems.add("executor", msg, k.loc, "move it under `executor:` (only script and endpoint have tool-level forms)");
        } else if let Some(meant) = crate::diag::within_edits(key, TOOL_KEYS.iter().copied(), 2) {
            let msg = format!("`{}` looks like `{meant}` misspelt", crate::diag::printable(key));
            problems.add("misspelt_key", msg, k.loc, "fix the key's spelling (other keys are ignored)");
        }
    }
    let name = match name_node {
        Some(n) => match (scalar(n), &n.kind) {
            (Some(s), Kind::Scalar { .. }) if names::is_manifest_tool_name(s) => Some(s.to_string()),
            (Some(s), Kind::Scalar { .. }) => {
                let msg = format!("the name \"{}\" must match ^[A-Za-z0-9_-]{{1,64}}$", crate::diag::printable(s));
                problems.add("name", msg, n.loc, "letters, digits, `_` and `-`, at most 64 (the function-name rule of the model APIs)");
                None
            }
            _ => {
                problems.add(
                    "name",
                    format!("`name` must be a string, not {}", n.kind_name()),
                    n.loc,
                    "give the tool a name such as get_weather",
                );
                None
            }
        },
        None => {
            problems.add("name", "`name` is required", node.loc, "give the tool a name such as get_weather");
            None
        }
    };
    if let Some(n) = name_node.and_then(scalar) {
        match seen.get(n) {
            Some(&(first, first_loc)) => {
                let msg = format!("the name is declared twice; the first, tools[{first}], is kept");
                problems.add(
                    "duplicate",
                    msg,
                    name_node.map_or(node.loc, |n| n.loc),
                    "tool names are unique within a manifest: rename or remove this one",
                );
                problems.also(first_loc, "first declared here");
            }
            None => {
                seen.insert(n.to_string(), (i, name_node.map_or(node.loc, |n| n.loc)));
            }
        }
    }
    let description = match node.get("description") {
        Some(d) => match scalar(d) {
            Some(s) if !s.trim().is_empty() && d.as_map().is_none() && d.as_seq().is_none() => Some(s.to_string()),
            Some(_) if d.as_map().is_none() && d.as_seq().is_none() => {
                problems.add("description", "`description` is empty", d.loc, "say what the tool does: the model reads it");
                None
            }
            _ => {
                problems.add(
                    "description",
                    format!("`description` must be a string, not {}", d.kind_name()),
                    d.loc,
                    "say what the tool does: the model reads it",
                );
                None
            }
        },
        None => {
            problems.add("description", "`description` is required", node.loc, "say what the tool does: the model reads it");
            None
        }
    };
    let input_schema = input_schema(node, budget, problems);
    let inputs: BTreeSet<String> = input_schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let executor = executor(dir, node, &inputs, input_schema.is_some(), problems);
    let mut own = Partial::default();
    if let Some(t) = node.get("timeout_sec") {
        match policy::int(t, "timeout_sec", policy::TIMEOUT_SEC) {
            Ok(n) => own.timeout_sec = Some(n),
            Err((m, loc)) => problems.add("timeout", m, loc, "timeout_sec is whole seconds, from 1 to 3600"),
        }
    }
    if let Some(r) = node.get("retry") {
        for (m, loc) in policy::retry(r, "retry", &mut own) {
            problems.add(
                "retry",
                m,
                loc,
                "retry: {max_attempts: 1 to 10, backoff_ms: 0 to 600000}; a field left out comes from runtime.default_retry",
            );
        }
    }
    if !problems.is_empty() {
        return None;
    }
    let (Effective { timeout_sec, retry }, origins) = policy::merge(own, runtime);
    let loc = name_node.map_or(node.loc, |n| n.loc);
    Some(DynamicTool {
        name: name?,
        description: description?,
        input_schema: input_schema?,
        executor: executor?,
        timeout_sec,
        retry,
        origins,
        loc,
    })
}

/// The tool's `input_schema` (or its alias `parameters`) as JSON, checked: an object
/// schema, valid against its meta-schema. Absent: a schema of no arguments.
fn input_schema(node: &Node, budget: &mut usize, problems: &mut ToolProblems) -> Option<Value> {
    let help = "input_schema is a JSON Schema of type object: {type: object, properties: {…}, required: […]}";
    let (key, s) = match (node.get("input_schema"), node.get("parameters")) {
        (Some(_), Some(p)) => {
            problems.add("input_schema", "both `input_schema` and its alias `parameters` are given", p.loc, "keep one of them");
            return None;
        }
        (Some(s), None) => ("input_schema", s),
        (None, Some(p)) => ("parameters", p),
        (None, None) => return Some(json!({"type": "object", "properties": {}})),
    };
    if s.as_map().is_none() {
        problems.add("input_schema", format!("`{key}` must be a mapping (a JSON Schema), not {}", s.kind_name()), s.loc, help);
        return None;
    }
    let value = to_json(s);
    if value.get("type").and_then(Value::as_str) != Some("object") {
        let loc = s.get("type").map_or(s.loc, |t| t.loc);
        problems.add("input_schema", format!("`{key}.type` must be \"object\""), loc, "tool arguments are a JSON object: set type: object");
        return None;
    }
    if let Err(p) = schema::check(&value, budget) {
        let loc = locate(s, &p.path).unwrap_or(s.loc);
        problems.add("input_schema", format!("`{key}` is not a valid JSON Schema: {}", p.message), loc, help);
        return None;
    }
    Some(value)
}

/// The node at `path` under `node` (as deep as it goes).
fn locate(node: &Node, path: &[crate::describe::json_span::Seg]) -> Option<Loc> {
    use crate::describe::json_span::Seg;
    let mut cur = node;
    for seg in path {
        let next = match seg {
            Seg::Key(k) => cur.get(k),
            Seg::Index(i) => cur.as_seq().and_then(|s| s.get(*i)),
        };
        match next {
            Some(n) => cur = n,
            None => break,
        }
    }
    Some(cur.loc)
}

/// A YAML node as JSON: plain scalars typed by YAML's core schema (null, booleans,
/// integers, finite floats), everything else a string.
pub(crate) fn to_json(node: &Node) -> Value {
    match &node.kind {
        Kind::Seq(items) => Value::Array(items.iter().map(to_json).collect()),
        Kind::Map(entries) => {
            let mut m = Map::new();
            for (k, v) in entries {
                m.insert(scalar(k).unwrap_or_default().to_string(), to_json(v));
            }
            Value::Object(m)
        }
        Kind::Scalar { text, plain } => {
            if node.is_null() {
                return Value::Null;
            }
            if let Some(b) = node.as_bool() {
                return Value::Bool(b);
            }
            if let Some(n) = node.as_i64() {
                return Value::from(n);
            }
            let numeric = text.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+' || c == '.')
                && text.chars().any(|c| c.is_ascii_digit());
            if *plain
                && numeric
                && let Some(n) = text.parse::<f64>().ok().filter(|f| f.is_finite()).and_then(serde_json::Number::from_f64)
            {
                return Value::Number(n);
            }
            Value::String(text.clone())
        }
    }
}

/// A field given directly or through its alias, in one mapping or at tool level.
struct Field<'n> {
    /// How the manifest spelt it (`executor.entry`, `script`, …).
    spelt: String,
    node: &'n Node,
}

/// The executor, from `executor` and the tool-level `script` / `endpoint`.
fn executor(dir: &SkillDir, tool: &Node, inputs: &BTreeSet<String>, schema_ok: bool, problems: &mut ToolProblems) -> Option<Executor> {
    let help = "executor: {type: script, entry: scripts/x.py, args_template: …} or {type: http, method: GET, url: https://…, headers_template: {…}, body_template: …}";
    let ex = tool.get("executor").filter(|e| !e.is_null());
    if let Some(e) = ex {
        let Some(entries) = e.as_map() else {
            problems.add("executor", format!("`executor` must be a mapping, not {}", e.kind_name()), e.loc, help);
            return None;
        };
        for (k, _) in entries {
            let key = k.as_str().unwrap_or("?");
            if !EXECUTOR_KEYS.contains(&key) {
                let h = crate::diag::suggest(key, EXECUTOR_KEYS.iter().copied(), help);
                problems.add("executor", format!("`executor.{}` is not an executor field", crate::diag::printable(key)), k.loc, h);
            }
        }
    }
    let exget = |k: &str| ex.and_then(|e| e.get(k));
    let before = problems.len();
    let entry =
        one_of(&[("executor.entry", exget("entry")), ("executor.script", exget("script")), ("script", tool.get("script"))], problems);
    let url =
        one_of(&[("executor.url", exget("url")), ("executor.endpoint", exget("endpoint")), ("endpoint", tool.get("endpoint"))], problems);
    if problems.len() > before {
        return None;
    }
    let ty = match exget("type") {
        Some(t) => match scalar(t) {
            Some("script") => Some("script"),
            Some("http") => Some("http"),
            other => {
                let shown = crate::diag::printable(other.unwrap_or(t.kind_name()));
                problems.add("executor", format!("executor type \"{shown}\" is not `script` or `http`"), t.loc, help);
                return None;
            }
        },
        None => match (&entry, &url) {
            (Some(_), None) => Some("script"),
            (None, Some(_)) => Some("http"),
            (Some(e), Some(_)) => {
                problems.add("executor", "the tool gives both a script and a URL; set executor.type", e.node.loc, help);
                return None;
            }
            (None, None) => {
                let loc = ex.map_or(tool.loc, |e| e.loc);
                let msg = if ex.is_some() { "`executor.type` is required" } else { "`executor` is required" };
                problems.add("executor", msg, loc, help);
                return None;
            }
        },
    };
    let text_of = |f: &Field<'_>, problems: &mut ToolProblems| -> Option<String> {
        match &f.node.kind {
            Kind::Scalar { text, .. } => Some(text.clone()),
            _ => {
                problems.add("executor", format!("`{}` must be a string, not {}", f.spelt, f.node.kind_name()), f.node.loc, help);
                None
            }
        }
    };
    let field = |key: &str| exget(key).filter(|n| !n.is_null()).map(|n| Field { spelt: format!("executor.{key}"), node: n });
    let check_template = |f: &Field<'_>, text: &str, problems: &mut ToolProblems| {
        if !schema_ok {
            return;
        }
        match template::check(text, inputs) {
            Ok(()) => {}
            Err(template::Problem::Syntax { message, line }) => {
                let at = if text.contains('\n') { format!(" (line {line} of the template)") } else { String::new() };
                problems.add(
                    "template",
                    format!("`{}` is not a valid template{at}: {message}", f.spelt),
                    f.node.loc,
                    "templates are minijinja (Jinja2) syntax: {{ name }}, {% if … %}…{% endif %}",
                );
            }
            Err(template::Problem::Unknown(vars)) => {
                let known: Vec<&str> = inputs.iter().map(String::as_str).collect();
                let vars: Vec<String> = vars.iter().map(|v| format!("`{}`", crate::diag::printable(v))).collect();
                let msg = format!(
                    "`{}` reads {}, which {} neither an input property ({}) nor a built-in (args, env)",
                    f.spelt,
                    vars.join(", "),
                    if vars.len() == 1 { "is" } else { "are" },
                    if known.is_empty() { "the tool has none".to_string() } else { known.join(", ") }
                );
                problems.add(
                    "template",
                    msg,
                    f.node.loc,
                    "a template reads the tool's input properties, `args` (all of them) and `env` (the runtime's environment)",
                );
            }
            Err(template::Problem::Loads(tag)) => {
                problems.add(
                    "template",
                    format!("`{}` uses `{tag}`; a manifest template stands alone", f.spelt),
                    f.node.loc,
                    "write the template out in full",
                );
            }
        }
    };
    match ty? {
        "script" => {
            for k in ["method", "url", "endpoint", "headers_template", "body_template"] {
                if let Some(f) = field(k) {
                    problems.add("executor", format!("`{}` is a field of an http executor, not a script one", f.spelt), f.node.loc, help);
                }
            }
            if url.is_some() && exget("url").is_none() && exget("endpoint").is_none() {
                problems.add(
                    "executor",
                    "`endpoint` is for an http executor, not a script one",
                    tool.get("endpoint").map_or(tool.loc, |n| n.loc),
                    help,
                );
            }
            let Some(entry) = entry else {
                problems.add("executor", "a script executor needs `entry` (or `script`)", ex.map_or(tool.loc, |e| e.loc), help);
                return None;
            };
            let entry_text = text_of(&entry, problems)?;
            let entry_rel = match dir.script(&entry_text) {
                Ok(rel) => Some(rel),
                Err(why) => {
                    problems.add(
                        "script",
                        format!("`{}`: {why}", entry.spelt),
                        entry.node.loc,
                        "the script is a path relative to the skill folder, to a file inside it",
                    );
                    None
                }
            };
            let args_template = match field("args_template") {
                Some(f) => {
                    let t = text_of(&f, problems)?;
                    check_template(&f, &t, problems);
                    Some(t)
                }
                None => None,
            };
            Some(Executor::Script { entry: entry_rel?, args_template })
        }
        _ => {
            for k in ["entry", "script", "args_template"] {
                if let Some(f) = field(k) {
                    problems.add("executor", format!("`{}` is a field of a script executor, not an http one", f.spelt), f.node.loc, help);
                }
            }
            if entry.is_some() && exget("entry").is_none() && exget("script").is_none() {
                problems.add(
                    "executor",
                    "`script` is for a script executor, not an http one",
                    tool.get("script").map_or(tool.loc, |n| n.loc),
                    help,
                );
            }
            let Some(url) = url else {
                problems.add("executor", "an http executor needs `url` (or `endpoint`)", ex.map_or(tool.loc, |e| e.loc), help);
                return None;
            };
            let url_text = text_of(&url, problems)?;
            let t = url_text.trim_start();
            if !(t.starts_with("{{") || t.starts_with("http://") || t.starts_with("https://")) {
                let shown: String = crate::diag::printable(&url_text).chars().take(60).collect();
                problems.add("executor", format!("`{}` \"{shown}\" is not an http:// or https:// URL", url.spelt), url.node.loc, help);
            }
            check_template(&url, &url_text, problems);
            let body_template = match field("body_template") {
                Some(f) => {
                    let t = text_of(&f, problems)?;
                    check_template(&f, &t, problems);
                    Some(t)
                }
                None => None,
            };
            let method = match field("method") {
                Some(f) => {
                    let m = text_of(&f, problems)?.to_ascii_uppercase();
                    if !METHODS.contains(&m.as_str()) {
                        let shown = crate::diag::printable(&m);
                        problems.add(
                            "executor",
                            format!("`executor.method` \"{shown}\" is not one of {}", METHODS.join(", ")),
                            f.node.loc,
                            help,
                        );
                    }
                    m
                }
                None if body_template.is_some() => "POST".to_string(),
                None => "GET".to_string(),
            };
            let mut headers_template = BTreeMap::new();
            if let Some(f) = field("headers_template") {
                match f.node.as_map() {
                    Some(entries) => {
                        for (k, v) in entries {
                            let key = scalar(k).unwrap_or_default();
                            if key.is_empty() || !key.bytes().all(is_token_byte) {
                                let shown = crate::diag::printable(key);
                                problems.add(
                                    "executor",
                                    format!("\"{shown}\" is not an HTTP header name"),
                                    k.loc,
                                    "header names are letters, digits and !#$%&'*+-.^_`|~",
                                );
                                continue;
                            }
                            let vf = Field { spelt: format!("executor.headers_template.{key}"), node: v };
                            let Some(t) = text_of(&vf, problems) else { continue };
                            check_template(&vf, &t, problems);
                            headers_template.insert(key.to_string(), t);
                        }
                    }
                    None => problems.add(
                        "executor",
                        format!("`executor.headers_template` must be a mapping of header name to template, not {}", f.node.kind_name()),
                        f.node.loc,
                        help,
                    ),
                }
            }
            Some(Executor::Http { method, url: url_text, headers_template, body_template })
        }
    }
}

/// A field and its aliases, wherever they are given: more than one is a problem.
fn one_of<'n>(places: &[(&str, Option<&'n Node>)], problems: &mut ToolProblems) -> Option<Field<'n>> {
    let given: Vec<(&str, &'n Node)> = places.iter().filter_map(|(s, n)| n.filter(|n| !n.is_null()).map(|n| (*s, n))).collect();
    match given.as_slice() {
        [] => None,
        [(s, n)] => Some(Field { spelt: (*s).to_string(), node: n }),
        [(a, _), (b, n), ..] => {
            problems.add("executor", format!("both `{a}` and `{b}` are given; they are one field"), n.loc, "keep one of them");
            None
        }
    }
}

/// RFC 9110 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
