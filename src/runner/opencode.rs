//! OpenCode: `~/.config/opencode/opencode.json`, `mcp.<name>` (`type: remote`,
//! `oauth: false` so no OAuth probe) and the `tools` map over the wrapped names
//! `<server>_<tool>`: the server's glob off, each granted tool on.

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json, server_map};
use serde_json::{Map, Value, json};

pub(super) const NATIVE: Native = Native {
    filter: Filter::Hard,
    secrets: Secrets::Interpolate { prefix: "{env:", suffix: "}", upper_only: false },
    home: "/root",
    workdir: "/workspace",
    data: "/root/.local/share/opencode",
    files: &[FileSpec {
        root: Root::Home,
        path: ".config/opencode/opencode.json",
        role: "mcp-servers",
        syntax: Syntax::Json,
        owns: &[
            Own::Entries(&["mcp"]),
            Own::ServerKeys { map: &["tools"], servers: &["mcp"] },
            Own::Scalar(&["tools", "read"]),
            Own::Scalar(&["$schema"]),
        ],
    }],
    names: Names { prefix: "", separator: "_", extra: "-", max: 64 },
    verified: Verified::Driven { package: "opencode-ai", version: "1.18.33" },
    render,
    emits: "`mcp.<service>` (`type: remote`, `url`, `headers`, `oauth: false`, `timeout` ms); `tools`: `<service>_*: false` and `<service>_<tool>: true` per granted tool; `read: false` (hides the MCP resource tools, and OpenCode's file `read`)",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let mcp = server_map(servers, |s| json!({ "type": "remote", "url": s.url, "enabled": true, "oauth": false, "timeout": s.timeout_ms }));
    let mut tools = Map::new();
    for s in servers {
        tools.insert(format!("{}_*", s.name), Value::Bool(false));
        for t in &s.granted {
            tools.insert(format!("{}_{t}", s.name), Value::Bool(true));
        }
    }
    // OpenCode's MCP resource tools (`list_mcp_resources`, `list_mcp_resource_templates`,
    // `read_mcp_resource`) sit under the `read` permission and only `read: false` hides
    // them; it hides OpenCode's own file `read` tool too (docs/runners.md).
    tools.insert("read".to_string(), Value::Bool(false));
    let doc = json!({ "$schema": "https://opencode.ai/config.json", "mcp": mcp, "tools": tools });
    vec![json(&doc)]
}
