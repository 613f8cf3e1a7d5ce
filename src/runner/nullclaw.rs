//! NullClaw: `~/.nullclaw/config.json` (the upstream image's home is `/nullclaw-data`),
//! `mcp_servers.<name>` with `transport: http` (the default is stdio) and `timeout_ms`.
//! Its `tool_filter_groups` choose what is offered per turn, not what may be called, so
//! clawc treats it as having no filter.

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json, server_map};
use serde_json::json;

pub(super) const NATIVE: Native = Native {
    filter: Filter::None,
    secrets: Secrets::Literal,
    home: "/nullclaw-data",
    workdir: "/nullclaw-data",
    data: "/nullclaw-data/.nullclaw",
    files: &[FileSpec {
        root: Root::Home,
        path: ".nullclaw/config.json",
        role: "mcp-servers",
        syntax: Syntax::Json,
        owns: &[Own::Entries(&["mcp_servers"])],
    }],
    names: Names { prefix: "mcp_", separator: "_", extra: "-", max: 64 },
    verified: Verified::NotDriven("no CLI published to npm or PyPI (a Zig binary from GitHub releases, out of reach offline)"),
    render,
    emits: "`mcp_servers.<service>`: `transport: http`, `url`, `headers`, `timeout_ms`",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let map = server_map(servers, |s| json!({ "transport": "http", "url": s.url, "timeout_ms": s.timeout_ms }));
    vec![json(&json!({ "mcp_servers": map }))]
}
