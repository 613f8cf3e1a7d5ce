//! Goose: `~/.config/goose/config.yaml`, `extensions.<id>` tagged `type: streamable_http`
//! with `uri` and `available_tools` (a hard allow-list; empty would mean all, so clawc
//! never writes it empty). Its variable substitution is undocumented: a token is written
//! only with `--secrets inline`.

use super::native::{FileSpec, Filter, Names, Native, Own, Root, Secrets, Server, Syntax, Verified, quoted, quoted_list};
use std::fmt::Write;

pub(super) const NATIVE: Native = Native {
    filter: Filter::Hard,
    secrets: Secrets::Literal,
    home: "/root",
    workdir: "/workspace",
    data: "/root/.config/goose",
    files: &[FileSpec {
        root: Root::Home,
        path: ".config/goose/config.yaml",
        role: "mcp-servers",
        syntax: Syntax::Yaml,
        owns: &[Own::Entries(&["extensions"])],
    }],
    names: Names { prefix: "", separator: "__", extra: "-", max: 64 },
    verified: Verified::NotDriven("published only as a GitHub release binary (not on npm or PyPI), out of reach offline"),
    render,
    emits: "`extensions.<service>`: `enabled`, `type: streamable_http`, `name`, `uri`, `headers`, `timeout` (s), `available_tools`",
};

fn render(servers: &[Server]) -> Vec<Vec<u8>> {
    let mut out = String::from(
        "# Written by clawc: the pod MCP servers this agent may use. Merge into an existing\n# config with `clawc merge`.\nextensions:\n",
    );
    for s in servers {
        let _ = write!(
            out,
            "  {name}:\n    enabled: true\n    type: streamable_http\n    name: {name}\n    description: \"\"\n    uri: {}\n",
            quoted(&s.url),
            name = quoted(&s.name)
        );
        if let Some(a) = &s.auth {
            let _ = write!(out, "    headers:\n      Authorization: {}\n", quoted(&a.header));
        }
        let _ = write!(out, "    timeout: {}\n    available_tools: {}\n", s.timeout_s(), quoted_list(&s.granted));
    }
    vec![out.into_bytes()]
}
