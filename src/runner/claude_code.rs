//! Claude Code: user scope, which needs neither folder trust nor approval —
//! `~/.claude.json` top-level `mcpServers` (`type: http`) and `~/.claude/settings.json`
//! `permissions`. Claude Code has no hard filter and `allow` hides nothing: clawc allows
//! the granted tools and denies every other tool the service declares.

use super::native::{FileSpec, Filter, Item, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json, server_map};
use serde_json::{Value, json};

/// What clawc owns in a Claude settings file (also NanoClaw's).
pub(super) const CLAUDE_PERMISSIONS: [Own; 2] = [
    Own::ServerItems(&["permissions", "allow"], Item::ClaudePermission),
    Own::ServerItems(&["permissions", "deny"], Item::ClaudePermission),
];

pub(super) const NATIVE: Native = Native {
    filter: Filter::CallGate,
    secrets: Secrets::Interpolate { prefix: "${", suffix: "}", upper_only: false },
    home: "/root",
    workdir: "/workspace",
    data: "/root/.claude",
    files: &[
        FileSpec {
            root: Root::Home,
            path: ".claude.json",
            role: "mcp-servers",
            syntax: Syntax::Json,
            owns: &[Own::Entries(&["mcpServers"])],
        },
        FileSpec { root: Root::Home, path: ".claude/settings.json", role: "permissions", syntax: Syntax::Json, owns: &CLAUDE_PERMISSIONS },
    ],
    names: Names { prefix: "mcp__", separator: "__", extra: "-", max: 64 },
    verified: Verified::Driven { package: "@anthropic-ai/claude-code", version: "2.1.330" },
    render,
    emits: "`~/.claude.json` `mcpServers.<service>` (`type: http`, `url`, `headers`); `~/.claude/settings.json` `permissions.allow` (granted) and `permissions.deny` (every other declared tool, and the resource tools `ListMcpResourcesTool`, `ReadMcpResourceTool`, `ReadMcpResourceDirTool`)",
};

/// The tools Claude Code adds when a server has resources: they read any server's
/// resources, which no grant gives, so they are denied.
const RESOURCE_TOOLS: &[&str] = &["ListMcpResourcesTool", "ReadMcpResourceTool", "ReadMcpResourceDirTool"];

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let (mcp, permissions) = servers_and_permissions(servers);
    vec![json(&json!({ "mcpServers": mcp })), json(&json!({ "permissions": permissions }))]
}

/// The `mcpServers` map and the `permissions` object (shared with NanoClaw, which runs
/// the Claude Agent SDK).
pub(super) fn servers_and_permissions(servers: &[Server]) -> (Value, Value) {
    let map = server_map(servers, |s| json!({ "type": "http", "url": s.url }));
    let names = |list: fn(&Server) -> &[String]| -> Vec<String> {
        servers.iter().flat_map(|s| list(s).iter().map(|t| NATIVE.names.model(&s.name, t))).collect()
    };
    let mut deny = names(|s| &s.denied);
    deny.extend(RESOURCE_TOOLS.iter().map(|t| (*t).to_string()));
    (map, json!({ "allow": names(|s| &s.granted), "deny": deny }))
}
