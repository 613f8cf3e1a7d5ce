//! NanoClaw: its agent-runner calls the Claude Agent SDK, which has no declarative MCP
//! file of its own upstream; clawc writes the Claude Code project files (`.mcp.json`,
//! `.claude/settings.json` with `enabledMcpjsonServers` and the same allow/deny
//! permissions), which the SDK reads with `settingSources: ["project"]`.

use super::claude_code::CLAUDE_PERMISSIONS;
use super::native::{FileSpec, Filter, Item, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json};
use serde_json::json;

pub(super) const NATIVE: Native = Native {
    filter: Filter::CallGate,
    secrets: Secrets::Interpolate { prefix: "${", suffix: "}", upper_only: false },
    home: "/home/node",
    workdir: "/workspace/group",
    data: "/workspace/group",
    files: &[
        FileSpec {
            root: Root::Project,
            path: ".mcp.json",
            role: "mcp-servers",
            syntax: Syntax::Json,
            owns: &[Own::Entries(&["mcpServers"])],
        },
        FileSpec {
            root: Root::Project,
            path: ".claude/settings.json",
            role: "permissions",
            syntax: Syntax::Json,
            owns: &[CLAUDE_PERMISSIONS[0], CLAUDE_PERMISSIONS[1], Own::ServerItems(&["enabledMcpjsonServers"], Item::ServerName)],
        },
    ],
    names: Names { prefix: "mcp__", separator: "__", extra: "-", max: 64 },
    verified: Verified::NotDriven(
        "no published CLI: NanoClaw is a container image whose runner loads MCP servers in code; the files are Claude Code's, whose loading the SDK shares",
    ),
    render,
    emits: "project `.mcp.json` `mcpServers.<service>`; `.claude/settings.json` `enabledMcpjsonServers`, `permissions.allow`/`deny` as for Claude Code",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let (mcp, permissions) = super::claude_code::servers_and_permissions(servers);
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    vec![json(&json!({ "mcpServers": mcp })), json(&json!({ "enabledMcpjsonServers": names, "permissions": permissions }))]
}
