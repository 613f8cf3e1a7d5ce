//! MicroClaw: `<data_dir>/mcp.d/*.json` (read after `<data_dir>/mcp.json`, later files
//! winning per server), so clawc's servers sit in their own `mcp.d/clawc.json` beside
//! the operator's. `transport: streamable_http`, `endpoint`, `request_timeout_secs`. No
//! per-tool filter (its `trust` tiers only rate risk).

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json, server_map};
use serde_json::json;

pub(super) const NATIVE: Native = Native {
    filter: Filter::None,
    secrets: Secrets::Literal,
    home: "/root",
    workdir: "/claw-data",
    data: "/claw-data",
    files: &[FileSpec {
        root: Root::Data,
        path: "mcp.d/clawc.json",
        role: "mcp-servers",
        syntax: Syntax::Json,
        owns: &[Own::Entries(&["mcpServers"])],
    }],
    names: Names { prefix: "mcp_", separator: "_", extra: "-", max: 64 },
    verified: Verified::NotDriven("no CLI published to npm or PyPI (a Rust binary from GitHub releases, out of reach offline)"),
    render,
    emits: "`mcp.d/clawc.json` `mcpServers.<service>`: `transport: streamable_http`, `endpoint`, `headers`, `request_timeout_secs`",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let map = server_map(servers, |s| json!({ "transport": "streamable_http", "endpoint": s.url, "request_timeout_secs": s.timeout_s() }));
    vec![json(&json!({ "mcpServers": map }))]
}
