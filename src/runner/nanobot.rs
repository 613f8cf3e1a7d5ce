//! nanobot (HKUDS): `~/.nanobot/config.json`, `tools.mcpServers.<name>` with
//! `type: streamableHttp` and `enabledTools` (without `*` it also skips resources and
//! prompts). nanobot refuses private addresses, where a Compose network lives, unless
//! `tools.ssrfWhitelist` covers them: clawc lists Docker's default address pools. nanobot
//! expands `${VAR}` in its config (and refuses to start when VAR is unset).

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, json, server_map};
use serde_json::json;

/// Docker's default address pools for Compose networks.
pub(crate) const POD_NETWORKS: &[&str] = &["172.16.0.0/12", "192.168.0.0/16"];

pub(super) const NATIVE: Native = Native {
    filter: Filter::Hard,
    secrets: Secrets::Interpolate { prefix: "${", suffix: "}", upper_only: false },
    home: "/root",
    workdir: "/root/.nanobot/workspace",
    data: "/root/.nanobot",
    files: &[FileSpec {
        root: Root::Home,
        path: ".nanobot/config.json",
        role: "mcp-servers",
        syntax: Syntax::Json,
        owns: &[Own::Entries(&["tools", "mcpServers"]), Own::Union(&["tools", "ssrfWhitelist"])],
    }],
    names: Names { prefix: "mcp_", separator: "_", extra: "-", max: 64 },
    verified: Verified::Driven { package: "nanobot-ai", version: "0.3.5" },
    render,
    emits: "`tools.mcpServers.<service>`: `type: streamableHttp`, `url`, `headers`, `enabledTools`, `toolTimeout` (s); `tools.ssrfWhitelist` with Docker's default pools",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let map =
        server_map(servers, |s| json!({ "type": "streamableHttp", "url": s.url, "enabledTools": s.granted, "toolTimeout": s.timeout_s() }));
    vec![json(&json!({ "tools": { "ssrfWhitelist": POD_NETWORKS, "mcpServers": map } }))]
}
