//! Cursor (editor and `cursor-agent`): `~/.cursor/mcp.json`, `mcpServers.<name>` with
//! `url` and `${env:VAR}` references. Tools are toggled in its UI, not in a file: no
//! per-tool filter clawc can write.

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json, server_map};
use serde_json::json;

pub(super) const NATIVE: Native = Native {
    filter: Filter::None,
    secrets: Secrets::Interpolate { prefix: "${env:", suffix: "}", upper_only: false },
    home: "/root",
    workdir: "/workspace",
    data: "/root/.cursor",
    files: &[FileSpec {
        root: Root::Home,
        path: ".cursor/mcp.json",
        role: "mcp-servers",
        syntax: Syntax::Json,
        owns: &[Own::Entries(&["mcpServers"])],
    }],
    names: Names { prefix: "mcp_", separator: "_", extra: "-", max: 64 },
    verified: Verified::NotDriven("`cursor-agent` is not published to npm or PyPI and needs a Cursor login"),
    render,
    emits: "`mcpServers.<service>`: `url`, `headers` with `${env:VAR}`",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let map = server_map(servers, |s| json!({ "url": s.url }));
    vec![json(&json!({ "mcpServers": map }))]
}
