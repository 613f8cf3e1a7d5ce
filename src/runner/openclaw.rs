//! OpenClaw: `~/.openclaw/openclaw.json`, `mcp.servers.<name>` with `transport:
//! "streamable-http"` written out (OpenClaw's default is SSE) and `toolFilter.include`,
//! which also hides the utility tools it derives from resources and prompts.

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json, server_map};
use serde_json::json;

pub(super) const NATIVE: Native = Native {
    filter: Filter::Hard,
    secrets: Secrets::Interpolate { prefix: "${", suffix: "}", upper_only: true },
    home: "/root",
    workdir: "/workspace",
    data: "/root/.openclaw",
    files: &[FileSpec {
        root: Root::Home,
        path: ".openclaw/openclaw.json",
        role: "mcp-servers",
        syntax: Syntax::Json5,
        owns: &[Own::Entries(&["mcp", "servers"])],
    }],
    names: Names { prefix: "", separator: "__", extra: "-", max: 64 },
    verified: Verified::Driven { package: "openclaw", version: "2026.9.6" },
    render,
    emits: "`mcp.servers.<service>`: `url`, `transport: streamable-http`, `headers`, `toolFilter.include`, `requestTimeoutMs`",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let map = server_map(servers, |s| {
        json!({
            "url": s.url,
            "transport": "streamable-http",
            "toolFilter": { "include": s.granted },
            "requestTimeoutMs": s.timeout_ms,
        })
    });
    vec![json(&json!({ "mcp": { "servers": map } }))]
}
