//! OpenAI Codex CLI: `~/.codex/config.toml`, `[mcp_servers.<name>]` with `url` (Streamable
//! HTTP; Codex has no transport key), `enabled_tools` (a hard allow-list) and the token by
//! variable name (`bearer_token_env_var`). The model sees the tools in a namespace
//! `mcp__<server>`.

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, quoted, quoted_list};
use std::fmt::Write;

pub(super) const NATIVE: Native = Native {
    filter: Filter::Hard,
    secrets: Secrets::EnvName,
    home: "/root",
    workdir: "/workspace",
    data: "/root/.codex",
    files: &[FileSpec {
        root: Root::Home,
        path: ".codex/config.toml",
        role: "mcp-servers",
        syntax: Syntax::Toml,
        owns: &[Own::Entries(&["mcp_servers"])],
    }],
    names: Names { prefix: "mcp__", separator: "__", extra: "-", max: 64 },
    verified: Verified::Driven { package: "@openai/codex", version: "0.169.0" },
    render,
    emits: "`[mcp_servers.<service>]`: `url`, `bearer_token_env_var`, `enabled_tools`, `startup_timeout_sec`, `tool_timeout_sec`",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let mut out =
        String::from("# Written by clawc: the pod MCP servers this agent may use. Merge into an existing\n# config with `clawc merge`.\n");
    for s in servers {
        let _ = write!(out, "\n[mcp_servers.{}]\nurl = {}\n", s.name, quoted(&s.url));
        if let Some(a) = &s.auth {
            let _ = writeln!(out, "bearer_token_env_var = {}", quoted(&a.env));
        }
        let _ = writeln!(out, "enabled_tools = {}", quoted_list(&s.granted));
        let _ = writeln!(out, "startup_timeout_sec = 10.0\ntool_timeout_sec = {}.0", s.timeout_s());
    }
    vec![out.into_bytes()]
}
