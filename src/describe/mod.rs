//! Service descriptors (`claw.describe`, v1 and v2): the model, and decoding with the
//! exact checks Clawdapus applies, plus a JSON Schema check of every `inputSchema`.

mod decode;
pub mod diags;
pub mod json_span;
mod schema;
pub mod snapshot;

pub use decode::decode;

use serde_json::Value;

/// A validated descriptor. Free-form JSON (`inputSchema`, `annotations`) is kept as
/// `serde_json::Value`, whose maps are sorted: key order in the source never matters.
#[derive(Clone, Debug, PartialEq)]
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedSpec {
    pub name: String,
    pub path: String,
    pub ttl: u64,
    pub description: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub method: String,
    pub path: String,
    pub description: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthType {
    Bearer,
    Header,
    None,
}

#[derive(Clone, Debug, PartialEq, Eq)]
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpEndpoint {
    pub path: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub annotations: Option<Value>,
    /// `None` for MCP tools (the descriptor's `mcp` endpoint executes them).
    pub http: Option<HttpExec>,
}

impl Tool {
    /// `annotations.readOnly` / `readOnlyHint` (MCP), when declared.
    pub fn read_only(&self) -> Option<bool> {
        let a = self.annotations.as_ref()?;
        a.get("readOnlyHint").or_else(|| a.get("readOnly")).and_then(Value::as_bool)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpExec {
    pub method: String,
    pub path: String,
    pub body_key: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    pub recall: Option<String>,
    pub retain: Option<String>,
    pub forget: Option<String>,
}
