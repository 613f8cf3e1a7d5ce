//! VS Code (Copilot agent mode): the workspace's `.vscode/mcp.json`, top-level `servers`
//! (not `mcpServers`), `type: http`, `${env:VAR}` references. Per-tool choice lives in
//! custom agents and the chat tool picker, not in this file: no per-tool filter.

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json, server_map};
use serde_json::json;

pub(super) const NATIVE: Native = Native {
    filter: Filter::None,
    secrets: Secrets::Interpolate { prefix: "${env:", suffix: "}", upper_only: false },
    home: "/root",
    workdir: "/workspace",
    data: "/workspace/.vscode",
    files: &[FileSpec {
        root: Root::Project,
        path: ".vscode/mcp.json",
        role: "mcp-servers",
        syntax: Syntax::Json,
        owns: &[Own::Entries(&["servers"])],
    }],
    names: Names { prefix: "mcp_", separator: "_", extra: "-", max: 64 },
    verified: Verified::NotDriven("an editor, not a headless CLI: nothing to drive offline"),
    render,
    emits: "`servers.<service>`: `type: http`, `url`, `headers` with `${env:VAR}`",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let map = server_map(servers, |s| json!({ "type": "http", "url": s.url }));
    vec![json(&json!({ "servers": map }))]
}
