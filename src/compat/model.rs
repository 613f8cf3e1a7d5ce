//! One release of a service as compat compares it: the descriptor the describe stage
//! validated (so names, methods, body, auth and MCP paths are already normalised), plus
//! what that stage does not keep and compat must — each tool's `outputSchema` and
//! `title`, and the descriptor's `release` — read from the same text. Also where each
//! node is in that text, so findings can point at the line.

use crate::describe::json_span::Locator;
use crate::describe::{AuthType, FeedSpec, Memory, ServiceDescriptor, Transport, field, loose_string};
use crate::sourcemap::SourceFile;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A tool as compared.
#[derive(Clone, Debug)]
pub(crate) struct ToolSpec {
    pub name: String,
    pub description: String,
    pub title: Option<String>,
    pub input: Value,
    pub output: Option<Value>,
    pub annotations: Map<String, Value>,
    pub transport: Transport,
}

impl ToolSpec {
    /// `readOnly` or `readOnlyHint` is true (as `Tool::read_only` reads it).
    pub(crate) fn read_only(&self) -> bool {
        let a = &self.annotations;
        a.get("readOnlyHint").or_else(|| a.get("readOnly")).and_then(Value::as_bool) == Some(true)
    }
}

/// One side of the comparison.
#[derive(Clone, Debug)]
pub(crate) struct Release {
    pub service: String,
    /// The descriptor format version (1 or 2).
    pub version: u8,
    pub description: String,
    pub skill: Option<String>,
    /// The optional top-level `"release": "MAJOR.MINOR.PATCH"`.
    pub release: Option<String>,
    /// The MCP endpoint path, when the service speaks MCP.
    pub mcp: Option<String>,
    /// `bearer`, `header` or `none` (absent is `none`), and the bearer variable.
    pub auth: (&'static str, String),
    pub tools: BTreeMap<String, ToolSpec>,
    pub feeds: BTreeMap<String, FeedSpec>,
    /// By (method, path): description.
    pub endpoints: BTreeMap<(String, String), String>,
    pub memory: Option<Memory>,
    /// The text findings point into (the descriptor, or the snapshot as written), its name,
    /// and the parsed document with the JSON path of each tool and feed in it.
    pub file: String,
    pub source: SourceFile,
    tool_at: BTreeMap<String, Vec<String>>,
    first_tool: Option<Vec<String>>,
    feed_at: BTreeMap<String, usize>,
    endpoint_at: BTreeMap<(String, String), usize>,
}

/// By tool name: a snapshot's `outputSchema` and `title`.
type Extras = BTreeMap<String, (Option<Value>, Option<String>)>;

/// What a snapshot as written has that its converted descriptor does not, and the path of
/// its tools array (`[]` for a bare array, `["tools"]` for a `tools/list` result).
fn snapshot_extras(text: &str) -> (Extras, Vec<String>) {
    let doc: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let (raw, base) = match &doc {
        Value::Array(a) => (a.as_slice(), Vec::new()),
        Value::Object(o) => match field(o, "tools").map(|(_, v)| v) {
            Some(Value::Array(a)) => (a.as_slice(), vec!["tools".to_string()]),
            _ => (&[][..], Vec::new()),
        },
        _ => (&[][..], Vec::new()),
    };
    let mut extras = Extras::new();
    for t in raw.iter().filter_map(Value::as_object) {
        let Some(name) = field(t, "name").and_then(|(_, v)| v.as_str()).map(str::trim) else { continue };
        let output = field(t, "outputSchema").map(|(_, v)| v).filter(|v| !v.is_null()).cloned();
        let title = loose_string(t, "title");
        extras.entry(name.to_string()).or_insert((output, title));
    }
    (extras, base)
}

impl Release {
    /// The release of `service` described by `sd`, whose tools' schemas and annotations
    /// it takes (two 500-tool releases' schemas are most of what compat holds: they are
    /// moved, not copied; what stays in `sd` is the tools' names and transports).
    /// `raw` is the text the descriptor was
    /// decoded from, or — when it is a converted `.claw-tools.json` snapshot — the snapshot
    /// as written (its name and text), which keeps `outputSchema` and `title`.
    pub(crate) fn new(
        service: &str,
        sd: &mut ServiceDescriptor,
        descriptor_text: (&str, Arc<str>),
        snapshot: Option<(String, String)>,
    ) -> Self {
        // Its own copy when kept elsewhere (a watch's descriptors are not compared).
        let d = Arc::make_mut(&mut sd.descriptor).get_mut();
        // A converted snapshot's text is the descriptor clawc made of it: findings point
        // into the snapshot as written, and only it still has `outputSchema` and `title`.
        let (file, text, extras, base) = match snapshot {
            Some((name, text)) => {
                let (extras, base) = snapshot_extras(&text);
                (name, Arc::<str>::from(text), Some(extras), base)
            }
            None => (descriptor_text.0.to_string(), descriptor_text.1, None, vec!["tools".to_string()]),
        };
        let mut tools = BTreeMap::new();
        let mut tool_at = BTreeMap::new();
        // A descriptor decodes only when every tool does, so tool i is entry i as written.
        for (i, t) in d.tools.iter_mut().enumerate() {
            let (output, title) = match &extras {
                None => (t.output_schema.take(), t.title.take()),
                Some(x) => x.get(&t.name).cloned().unwrap_or_default(),
            };
            let mut p = base.clone();
            p.push(i.to_string());
            tool_at.insert(t.name.clone(), p);
            let annotations = match t.annotations.take() {
                Some(Value::Object(a)) => a,
                _ => Map::new(),
            };
            tools.insert(
                t.name.clone(),
                ToolSpec {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    title,
                    input: t.input_schema.take(),
                    output,
                    annotations,
                    transport: t.transport.clone(),
                },
            );
        }
        let release = if extras.is_some() { None } else { d.release.clone() };
        let auth = match &d.auth {
            None => ("none", String::new()),
            Some(a) => (
                match a.kind {
                    AuthType::Bearer => "bearer",
                    AuthType::Header => "header",
                    AuthType::None => "none",
                },
                a.env.clone(),
            ),
        };
        Release {
            service: service.to_string(),
            version: d.version,
            description: d.description.clone(),
            skill: d.skill.clone(),
            release,
            mcp: d.mcp.as_ref().map(|m| m.path.clone()),
            auth,
            tools,
            feeds: d.feeds.iter().map(|f| (f.name.clone(), f.clone())).collect(),
            endpoints: d.endpoints.iter().map(|e| ((e.method.clone(), e.path.clone()), e.description.clone())).collect(),
            memory: d.memory.clone(),
            source: SourceFile::new(file.clone(), text),
            file,
            first_tool: tool_at.values().min_by_key(|p| p.last().and_then(|i| i.parse::<usize>().ok())).cloned(),
            tool_at,
            feed_at: d.feeds.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect(),
            endpoint_at: d.endpoints.iter().enumerate().map(|(i, e)| ((e.method.clone(), e.path.clone()), i)).collect(),
        }
    }

    /// The path of tool `name` in the document (`None`: not in it).
    pub(crate) fn tool_path(&self, name: &str) -> Option<&[String]> {
        self.tool_at.get(name).map(Vec::as_slice)
    }

    /// The path of some tool of the document (the first written), when it has one.
    pub(crate) fn tool_path_any(&self) -> Option<&[String]> {
        self.first_tool.as_deref()
    }

    pub(crate) fn feed_path(&self, name: &str) -> Option<Vec<String>> {
        self.feed_at.get(name).map(|i| vec!["feeds".to_string(), i.to_string()])
    }

    pub(crate) fn endpoint_path(&self, key: &(String, String)) -> Option<Vec<String>> {
        self.endpoint_at.get(key).map(|i| vec!["endpoints".to_string(), i.to_string()])
    }

    /// The 1-based line of the node at `path` in the text (of its deepest ancestor there,
    /// when the node itself is not written there, e.g. behind a `$ref`), through a
    /// [`Locator`] of [`Release::source`] that the caller keeps across calls.
    pub(crate) fn line_of(&self, locator: &mut Locator, path: &[String]) -> u32 {
        locator.span_of_names(path).line
    }
}
