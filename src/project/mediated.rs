//! The cllama context files: `tools.json`, `feeds.json`, `memory.json`, in Clawdapus'
//! exact shapes (field order = struct order, omitted-when-empty fields skipped).

use crate::artifact::json::to_go_json;
use crate::describe::Transport;
use crate::grant::{GrantedTool, ResolvedFeed, ResolvedMemory, SecretMode, Token};
use crate::pod::ToolPolicy;
use crate::registry::Registry;
use serde::Serialize;
use serde_json::Value;

#[derive(Serialize)]
struct ToolsFile<'a> {
    version: u32,
    tools: Vec<ToolEntry<'a>>,
    policy: Policy,
}

#[derive(Serialize)]
struct ToolEntry<'a> {
    name: String,
    description: &'a str,
    #[serde(rename = "inputSchema")]
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a Value>,
    execution: Execution<'a>,
}

#[derive(Serialize)]
struct Execution<'a> {
    transport: &'static str,
    service: &'a str,
    base_url: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<AuthOut>,
}

#[derive(Serialize)]
struct AuthOut {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    token: String,
}

#[derive(Serialize)]
struct Policy {
    max_rounds: u64,
    timeout_per_tool_ms: u64,
    total_timeout_ms: u64,
}

/// The text a token is written as: the value (inline) or `${VAR}` (redact).
pub(crate) fn token_text(t: &Token, mode: SecretMode) -> String {
    match (mode, &t.value) {
        (SecretMode::Inline, Some(v)) => v.clone(),
        _ => format!("${{{}}}", t.env),
    }
}

fn auth_out(t: Option<&Token>, mode: SecretMode) -> Option<AuthOut> {
    t.map(|t| AuthOut { kind: "bearer", token: token_text(t, mode) })
}

pub(crate) fn tools_json(reg: &Registry, tools: &[GrantedTool], policy: &ToolPolicy, mode: SecretMode) -> Vec<u8> {
    let entries = tools
        .iter()
        .map(|g| {
            let tool = reg.tool(&g.service, g.index);
            let (method, tool_name, body_key) = match &tool.transport {
                Transport::Http { method, body_key, .. } => (Some(method.as_str()), None, body_key.as_deref()),
                Transport::Mcp { tool_name, .. } => (None, Some(tool_name.as_str()), None),
            };
            let annotations = tool.annotations.as_ref().filter(|a| a.as_object().is_some_and(|o| !o.is_empty()));
            ToolEntry {
                name: reg.tool_name(&g.service, g.index).to_string(),
                description: &tool.description,
                input_schema: &tool.input_schema,
                annotations,
                execution: Execution {
                    transport: tool.transport.name(),
                    service: &g.service,
                    base_url: &g.base_url,
                    method,
                    path: tool.transport.path(),
                    tool_name,
                    body_key,
                    auth: auth_out(g.auth.as_deref(), mode),
                },
            }
        })
        .collect();
    let policy = Policy {
        max_rounds: policy.max_rounds.unwrap_or(8),
        timeout_per_tool_ms: policy.timeout_per_tool_ms.unwrap_or(30_000),
        total_timeout_ms: policy.total_timeout_ms.unwrap_or(120_000),
    };
    to_go_json(&ToolsFile { version: 1, tools: entries, policy })
}

#[derive(Serialize)]
struct FeedOut<'a> {
    name: String,
    source: &'a str,
    path: String,
    ttl: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<String>,
}

/// `{claw_id}` in feed names and paths becomes the agent id.
pub(crate) fn feeds_json(agent: &str, feeds: &[ResolvedFeed], mode: SecretMode) -> Vec<u8> {
    let out: Vec<FeedOut> = feeds
        .iter()
        .map(|f| {
            let (path, url) = f.path_and_url_for(agent);
            FeedOut {
                name: f.name_for(agent),
                source: &f.source,
                url,
                path,
                ttl: f.ttl,
                auth: f.auth.as_ref().map(|t| token_text(t, mode)),
            }
        })
        .collect();
    to_go_json(&out)
}

#[derive(Serialize)]
struct MemoryOut<'a> {
    version: u32,
    service: &'a str,
    base_url: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    recall: Option<Op<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retain: Option<Op<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    forget: Option<Op<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<AuthOut>,
}

#[derive(Serialize)]
struct Op<'a> {
    path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
}

pub(crate) fn memory_json(m: &ResolvedMemory, mode: SecretMode) -> Vec<u8> {
    let out = MemoryOut {
        version: 1,
        service: &m.service,
        base_url: &m.base_url,
        recall: m.ops.recall.as_deref().map(|path| Op { path, timeout_ms: Some(m.timeout_ms) }),
        retain: m.ops.retain.as_deref().map(|path| Op { path, timeout_ms: None }),
        forget: m.ops.forget.as_deref().map(|path| Op { path, timeout_ms: None }),
        auth: auth_out(m.auth.as_ref(), mode),
    };
    to_go_json(&out)
}
