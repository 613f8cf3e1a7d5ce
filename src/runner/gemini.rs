//! Gemini CLI: `~/.gemini/settings.json`, `mcpServers.<name>` with `httpUrl` (Streamable
//! HTTP; `url` would mean SSE), `includeTools` (a hard allow-list), `trust: true` (headless
//! mode drops MCP tools that would need a confirmation nobody can give), and
//! `~/.gemini/trustedFolders.json`, without which headless Gemini refuses to start, and a
//! policy denying the resource tools `includeTools` does not reach.

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json, server_map};
use serde_json::json;

pub(super) const NATIVE: Native = Native {
    filter: Filter::Hard,
    secrets: Secrets::Interpolate { prefix: "${", suffix: "}", upper_only: false },
    home: "/root",
    workdir: "/workspace",
    data: "/root/.gemini",
    files: &[
        FileSpec {
            root: Root::Home,
            path: ".gemini/settings.json",
            role: "mcp-servers",
            syntax: Syntax::Json,
            owns: &[Own::Entries(&["mcpServers"])],
        },
        FileSpec {
            root: Root::Home,
            path: ".gemini/trustedFolders.json",
            role: "folder-trust",
            syntax: Syntax::Json,
            owns: &[Own::Entries(&[])],
        },
        FileSpec {
            root: Root::Home,
            path: ".gemini/policies/clawc.toml",
            role: "policy",
            syntax: Syntax::Toml,
            owns: &[Own::Entries(&[])],
        },
    ],
    names: Names { prefix: "mcp_", separator: "_", extra: "-.", max: 63 },
    verified: Verified::Driven { package: "@google/gemini-cli", version: "0.61.0" },
    render,
    emits: "`mcpServers.<service>`: `httpUrl`, `headers`, `includeTools`, `timeout` (ms), `trust`; `trustedFolders.json` trusting `/`; `policies/clawc.toml` denying the resource tools `list_mcp_resources`, `read_mcp_resource`",
};

/// `includeTools` does not reach the tools Gemini adds when a server has resources
/// (`list_mcp_resources`, `read_mcp_resource`): a policy rule denies them.
const POLICY: &str = "# Written by clawc: Gemini's MCP resource tools read resources no grant gives.\n[[rule]]\ntoolName = [\"list_mcp_resources\", \"read_mcp_resource\"]\ndecision = \"deny\"\npriority = 900\n";

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let map = server_map(servers, |s| json!({ "httpUrl": s.url, "includeTools": s.granted, "timeout": s.timeout_ms, "trust": true }));
    vec![json(&json!({ "mcpServers": map })), json(&json!({ "/": "TRUST_FOLDER" })), POLICY.as_bytes().to_vec()]
}
