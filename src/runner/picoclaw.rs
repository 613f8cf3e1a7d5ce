//! PicoClaw: `~/.picoclaw/config.json` (Clawdapus sets `PICOCLAW_HOME=/home/picoclaw/.picoclaw`),
//! `tools.mcp.enabled` and `tools.mcp.servers.<name>` with `type: http` written out (a
//! bare `url` means SSE). No per-tool filter and no variable references.

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json, server_map};
use serde_json::json;

pub(super) const NATIVE: Native = Native {
    filter: Filter::None,
    secrets: Secrets::Literal,
    home: "/home/picoclaw",
    workdir: "/home/picoclaw",
    data: "/home/picoclaw/.picoclaw",
    files: &[FileSpec {
        root: Root::Home,
        path: ".picoclaw/config.json",
        role: "mcp-servers",
        syntax: Syntax::Json,
        owns: &[Own::Entries(&["tools", "mcp", "servers"]), Own::Scalar(&["tools", "mcp", "enabled"])],
    }],
    names: Names { prefix: "mcp_", separator: "_", extra: "-", max: 64 },
    verified: Verified::NotDriven("no CLI published to npm or PyPI (a Go binary from GitHub releases, out of reach offline)"),
    render,
    emits: "`tools.mcp.enabled: true`; `tools.mcp.servers.<service>`: `enabled`, `type: http`, `url`, `headers`",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let map = server_map(servers, |s| json!({ "enabled": true, "type": "http", "url": s.url }));
    vec![json(&json!({ "tools": { "mcp": { "enabled": true, "servers": map } } }))]
}
