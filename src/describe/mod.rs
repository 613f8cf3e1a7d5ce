//! Service descriptors (`claw.describe`, v1 and v2): the model, and decoding with the
//! exact checks Clawdapus applies, plus a JSON Schema check of every `inputSchema`.

mod cache;
mod decode;
pub(crate) mod diags;
mod free_form;
pub(crate) mod json_span;
mod kept;
pub(crate) mod merge;
pub(crate) mod schema;
pub(crate) mod service;
mod shared;
pub(crate) mod snapshot;
pub(crate) mod tool_name;

pub(crate) use cache::Cache;
pub(crate) use decode::{decode, field, loose_string};
pub(crate) use free_form::FreeForm;
pub use kept::Decoded;
pub(crate) use service::{Described, RunnerFact, ServiceDescriptor};
pub(crate) use shared::SharedDescriptor;
pub(crate) use tool_name::ToolName;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A validated descriptor. Free-form JSON (`inputSchema`, `annotations`) is kept as
/// `serde_json::Value`, whose maps are sorted: key order in the source never matters.
#[derive(Clone, Debug, Hash, PartialEq, Serialize, Deserialize)]
pub struct Descriptor {
    pub version: u8,
    pub description: String,
    pub feeds: Vec<FeedSpec>,
    pub endpoints: Vec<Endpoint>,
    pub auth: Option<Auth>,
    pub skill: Option<String>,
    pub tools: Vec<Tool>,
    /// The MCP endpoint path when the service speaks MCP (all its tools run through it).
    pub mcp: Option<McpEndpoint>,
    pub memory: Option<Memory>,
    /// `release` as written, trimmed: the label `clawc compat` reports (never projected).
    pub release: Option<String>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedSpec {
    pub name: String,
    pub path: String,
    pub ttl: u64,
    pub description: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    pub method: String,
    pub path: String,
    pub description: String,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuthType {
    Bearer,
    Header,
    None,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, Serialize, Deserialize)]
pub struct Auth {
    pub kind: AuthType,
    pub env: String,
}

impl Auth {
    /// The variable holding a bearer token, when the descriptor asks for one.
    pub fn bearer_env(&self) -> Option<&str> {
        (self.kind == AuthType::Bearer && !self.env.is_empty()).then_some(self.env.as_str())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpEndpoint {
    pub path: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    /// Parsed when first looked at, when the descriptor was taken from the cache.
    pub input_schema: FreeForm,
    pub annotations: Option<Value>,
    /// How the tool is called.
    pub transport: Transport,
    /// `title` as written (MCP's display name), trimmed; compared by `clawc compat`,
    /// never projected.
    pub title: Option<String>,
    /// `outputSchema` as written, unchecked; compared by `clawc compat`, never projected.
    pub output_schema: Option<Value>,
}

impl Tool {
    /// `annotations.readOnly` / `readOnlyHint` (MCP), when declared.
    pub fn read_only(&self) -> Option<bool> {
        let a = self.annotations.as_ref()?;
        a.get("readOnlyHint").or_else(|| a.get("readOnly")).and_then(Value::as_bool)
    }

    /// `read-only`, `side-effecting` or `unannotated`, from [`Tool::read_only`].
    pub fn effect(&self) -> &'static str {
        match self.read_only() {
            Some(true) => "read-only",
            Some(false) => "side-effecting",
            None => "unannotated",
        }
    }
}

/// How a tool is executed: its own HTTP route, or `tools/call` on the service's MCP
/// endpoint. A descriptor with `mcp` has only MCP tools, one without only HTTP tools.
#[derive(Clone, Debug, Hash, PartialEq, Eq, Serialize, Deserialize)]
pub enum Transport {
    Http {
        /// Upper case: `GET`, `POST`, `PUT`, `PATCH`, `DELETE`.
        method: String,
        path: String,
        /// The body encoding when declared (only `json`).
        body: Option<String>,
        /// Arguments are wrapped in `{"<body_key>": …}` (POST, PUT, PATCH only).
        body_key: Option<String>,
    },
    Mcp {
        /// The service's MCP endpoint path.
        path: String,
        /// The name `tools/call` is sent with.
        tool_name: String,
    },
}

impl Transport {
    /// `http` or `mcp`, as tools.json writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Transport::Http { .. } => "http",
            Transport::Mcp { .. } => "mcp",
        }
    }

    /// The request path (the route, or the MCP endpoint).
    pub fn path(&self) -> &str {
        match self {
            Transport::Http { path, .. } | Transport::Mcp { path, .. } => path,
        }
    }
}

#[derive(Clone, Debug, Hash, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    pub recall: Option<String>,
    pub retain: Option<String>,
    pub forget: Option<String>,
}
