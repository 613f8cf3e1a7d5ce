//! Hermes Agent: `~/.hermes/config.yaml`, `mcp_servers.<name>` with `tools.include` (a
//! hard allow-list) and `resources: false`, `prompts: false` (else Hermes gives the model
//! utility tools for them). The model sees `mcp__<server>__<tool>`, with every character
//! but letters, digits and `_` turned into `_`.

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, quoted, quoted_list};
use std::fmt::Write;

pub(super) const NATIVE: Native = Native {
    filter: Filter::Hard,
    secrets: Secrets::Interpolate { prefix: "${", suffix: "}", upper_only: false },
    home: "/root",
    workdir: "/workspace",
    data: "/root/.hermes",
    files: &[FileSpec {
        root: Root::Home,
        path: ".hermes/config.yaml",
        role: "mcp-servers",
        syntax: Syntax::Yaml,
        owns: &[Own::Entries(&["mcp_servers"])],
    }],
    names: Names { prefix: "mcp__", separator: "__", extra: "", max: 64 },
    verified: Verified::Driven { package: "hermes-agent[mcp]", version: "0.19.0" },
    render,
    emits: "`mcp_servers.<service>`: `url`, `headers`, `timeout` (s), `tools: {include, resources: false, prompts: false}`",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let mut out = String::from(
        "# Written by clawc: the pod MCP servers this agent may use. Merge into an existing\n# config with `clawc merge`.\nmcp_servers:\n",
    );
    for s in servers {
        let _ = write!(out, "  {}:\n    url: {}\n", quoted(&s.name), quoted(&s.url));
        if let Some(a) = &s.auth {
            let _ = write!(out, "    headers:\n      Authorization: {}\n", quoted(&a.header));
        }
        let _ = writeln!(out, "    timeout: {}", s.timeout_s());
        let _ = write!(out, "    tools:\n      include: {}\n      resources: false\n      prompts: false\n", quoted_list(&s.granted));
    }
    vec![out.into_bytes()]
}
