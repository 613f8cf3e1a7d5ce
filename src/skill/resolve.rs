//! SPEC-0023 tool resolution ahead of time: a skill's Tool Discovery candidates (read by
//! [`super::markdown`]) against what an agent will have (the tools its pod grants it and
//! the CLIs its image carries), giving the line REQ-5 says the agent logs. Pure; the pod
//! compile builds the [`Inventory`] and reports the [`Resolution`].
//!
//! The rules (`docs/skills.md` states them for users):
//!
//! - Candidates are tried MCP first, then CLI, then HTTP (REQ-4), each kind in list order.
//!   The first tried is the preferred tool; the first available is the one used.
//! - `mcp__<service>__<tool>` is available when a granted tool's `mcp__<service>__<tool>`
//!   equals it (so a tool's name may itself contain `__`), or the name the agent's runner
//!   shows the model does. `service.tool` is available when a granted tool is that tool of
//!   that service, or is shown by that name.
//! - A trailing `*` is a prefix: `mcp__gitea__*` (or `gitea.*`) matches the first granted
//!   tool, in grant order, whose name in that form, or whose shown name, starts with the
//!   rest; the log names that tool. `docker*` matches the first CLI, in sorted order.
//! - A CLI, or an HTTP command (`curl`, `wget`, …), is available when the image has it. A
//!   URL is available when the image has `curl` or `wget`, and the log names the URL.
//! - Names are compared exactly (case matters).

use std::collections::BTreeSet;
use std::ops::Bound;

/// A tool path's kind, in SPEC-0023's order of preference (MCP > CLI > HTTP).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub(crate) enum ToolKind {
    Mcp,
    Cli,
    Http,
}

impl ToolKind {
    /// The `<type>` of the spec's log lines.
    pub(crate) fn label(self) -> &'static str {
        match self {
            ToolKind::Mcp => "MCP",
            ToolKind::Cli => "CLI",
            ToolKind::Http => "HTTP",
        }
    }
}

/// One tool a skill's Tool Discovery section lists.
#[derive(Clone, Debug, Hash, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Candidate {
    /// As written (a trailing `*` makes it a prefix).
    pub name: String,
    pub kind: ToolKind,
    /// 1-based line of the list item
    pub line: u32,
}

/// One tool granted to the agent.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(crate) struct Granted {
    pub service: String,
    pub tool: String,
    /// the name the agent's runner shows the model (may equal `service.tool`)
    pub shown: String,
}

/// What an agent has, ahead of time.
#[derive(Clone, Debug, Hash, Default, PartialEq, Eq)]
pub(crate) struct Inventory {
    /// In grant order.
    pub granted: Vec<Granted>,
    /// The CLIs on the agent's image.
    pub cli: BTreeSet<String>,
}

/// Which tool a skill will use, as REQ-5 logs it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub(crate) enum Resolution {
    /// The preferred candidate is available.
    Using { tool: String, kind: ToolKind },
    /// A later candidate is: `preferred` is the first candidate in preference order.
    Fallback { preferred: String, tool: String, kind: ToolKind },
    /// None is available.
    NoTool { capability: String },
}

/// The tool a skill will use. `None` when the skill lists no candidates.
pub(crate) fn resolve(candidates: &[Candidate], capability: &str, inv: &Inventory) -> Option<Resolution> {
    let mut order: Vec<&Candidate> = candidates.iter().collect();
    // Stable: list order within a kind is the skill's finer preference.
    order.sort_by_key(|c| c.kind);
    let preferred = order.first()?;
    let found = order.iter().enumerate().find_map(|(i, c)| available(c, inv).map(|tool| (i, tool, c.kind)));
    Some(match found {
        Some((0, tool, kind)) => Resolution::Using { tool, kind },
        Some((_, tool, kind)) => Resolution::Fallback { preferred: preferred.name.clone(), tool, kind },
        None => Resolution::NoTool { capability: capability.to_string() },
    })
}

impl Resolution {
    /// SPEC-0023's own log line: `[skill:<name>] Using: <tool> (<type>)`,
    /// `[skill:<name>] WARNING: <preferred> not found, falling back to <tool> (<type>)`,
    /// `[skill:<name>] ERROR: No suitable tool found for <capability>`.
    pub(crate) fn line(&self, skill: &str) -> String {
        match self {
            Resolution::Using { tool, kind } => format!("[skill:{skill}] Using: {tool} ({})", kind.label()),
            Resolution::Fallback { preferred, tool, kind } => {
                format!("[skill:{skill}] WARNING: {preferred} not found, falling back to {tool} ({})", kind.label())
            }
            Resolution::NoTool { capability } => format!("[skill:{skill}] ERROR: No suitable tool found for {capability}"),
        }
    }
}

/// The tool `candidate` names in `inv`, as the log line writes it; `None` when absent.
fn available(candidate: &Candidate, inv: &Inventory) -> Option<String> {
    let name = candidate.name.as_str();
    match candidate.kind {
        ToolKind::Mcp => mcp(name, &inv.granted),
        ToolKind::Http if is_url(name) => (inv.cli.contains("curl") || inv.cli.contains("wget")).then(|| name.to_string()),
        ToolKind::Cli | ToolKind::Http => cli(name, &inv.cli),
    }
}

fn is_url(name: &str) -> bool {
    name.starts_with("http://") || name.starts_with("https://")
}

/// A CLI by name, or the first (sorted) that a `prefix*` matches.
fn cli(name: &str, cli: &BTreeSet<String>) -> Option<String> {
    match name.strip_suffix('*') {
        Some(prefix) => cli.range::<str, _>((Bound::Included(prefix), Bound::Unbounded)).next().filter(|n| n.starts_with(prefix)).cloned(),
        None => cli.contains(name).then(|| name.to_string()),
    }
}

/// A granted tool by either MCP form, or the first (grant order) that a prefix matches.
fn mcp(name: &str, granted: &[Granted]) -> Option<String> {
    let dotted = !name.starts_with("mcp__");
    let written = |g: &Granted| {
        if dotted { format!("{}.{}", g.service, g.tool) } else { format!("mcp__{}__{}", g.service, g.tool) }
    };
    match name.strip_suffix('*') {
        Some(prefix) => granted.iter().find_map(|g| {
            let form = written(g);
            if form.starts_with(prefix) { Some(form) } else { g.shown.starts_with(prefix).then(|| g.shown.clone()) }
        }),
        None => granted.iter().any(|g| g.shown == name || written(g) == name).then(|| name.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(name: &str, kind: ToolKind) -> Candidate {
        Candidate { name: name.to_string(), kind, line: 1 }
    }

    fn grant(service: &str, tool: &str, shown: &str) -> Granted {
        Granted { service: service.to_string(), tool: tool.to_string(), shown: shown.to_string() }
    }

    fn inventory(granted: &[(&str, &str)], cli: &[&str]) -> Inventory {
        Inventory {
            granted: granted.iter().map(|(s, t)| grant(s, t, &format!("{s}.{t}"))).collect(),
            cli: cli.iter().map(|c| (*c).to_string()).collect(),
        }
    }

    fn git_pr() -> Vec<Candidate> {
        vec![
            cand("mcp__gitea__create_pull_request", ToolKind::Mcp),
            cand("mcp__github__create_pull_request", ToolKind::Mcp),
            cand("gh", ToolKind::Cli),
            cand("tea", ToolKind::Cli),
            cand("curl", ToolKind::Http),
        ]
    }

    fn line(candidates: &[Candidate], inv: &Inventory) -> String {
        let found = resolve(candidates, "Create Pull Request", inv).expect("candidates listed");
        found.line("git-pr")
    }

    #[test]
    fn req4_mcp_preferred_when_available() {
        let inv = inventory(&[("gitea", "create_pull_request")], &["gh"]);
        assert_eq!(
            resolve(&git_pr(), "Create Pull Request", &inv),
            Some(Resolution::Using { tool: "mcp__gitea__create_pull_request".into(), kind: ToolKind::Mcp })
        );
        assert_eq!(line(&git_pr(), &inv), "[skill:git-pr] Using: mcp__gitea__create_pull_request (MCP)");
    }

    #[test]
    fn req4_cli_then_http_fallback_then_none() {
        assert_eq!(
            line(&git_pr(), &inventory(&[], &["gh", "curl"])),
            "[skill:git-pr] WARNING: mcp__gitea__create_pull_request not found, falling back to gh (CLI)"
        );
        assert_eq!(
            resolve(&git_pr(), "x", &inventory(&[], &["curl"])),
            Some(Resolution::Fallback { preferred: "mcp__gitea__create_pull_request".into(), tool: "curl".into(), kind: ToolKind::Http })
        );
        let health = [cand("mcp__docker__*", ToolKind::Mcp), cand("docker", ToolKind::Cli)];
        let none = resolve(&health, "container inspection", &inventory(&[("git", "x")], &["gh"])).expect("listed");
        assert_eq!(none, Resolution::NoTool { capability: "container inspection".into() });
        assert_eq!(none.line("container-health"), "[skill:container-health] ERROR: No suitable tool found for container inspection");
        assert_eq!(resolve(&[], "x", &inventory(&[], &["gh"])), None);
    }

    #[test]
    fn req12_removing_the_mcp_tool_falls_through_to_docker() {
        let health = [cand("mcp__docker__list_containers", ToolKind::Mcp), cand("docker", ToolKind::Cli)];
        let with = inventory(&[("docker", "list_containers")], &["docker"]);
        assert_eq!(line(&health, &with), "[skill:git-pr] Using: mcp__docker__list_containers (MCP)");
        let without = inventory(&[], &["docker"]);
        assert_eq!(line(&health, &without), "[skill:git-pr] WARNING: mcp__docker__list_containers not found, falling back to docker (CLI)");
    }

    #[test]
    fn mcp_comes_before_cli_and_http_whatever_the_list_order() {
        let listed = [cand("curl", ToolKind::Http), cand("gh", ToolKind::Cli), cand("github.create_pr", ToolKind::Mcp)];
        let inv = inventory(&[("github", "create_pr")], &["gh", "curl"]);
        assert_eq!(line(&listed, &inv), "[skill:git-pr] Using: github.create_pr (MCP)");
        let inv = inventory(&[], &["gh", "curl"]);
        assert_eq!(line(&listed, &inv), "[skill:git-pr] WARNING: github.create_pr not found, falling back to gh (CLI)");
        // Within a kind, list order holds.
        let clis = [cand("tea", ToolKind::Cli), cand("gh", ToolKind::Cli)];
        assert_eq!(line(&clis, &inventory(&[], &["gh", "tea"])), "[skill:git-pr] Using: tea (CLI)");
    }

    #[test]
    fn mcp_names_match_either_form_or_the_shown_name() {
        let inv = Inventory {
            granted: vec![grant("gitea", "create__pr", "gitea.create__pr"), grant("docs", "search", "search_docs")],
            ..Inventory::default()
        };
        let using = |name: &str| available(&cand(name, ToolKind::Mcp), &inv);
        assert_eq!(using("mcp__gitea__create__pr").as_deref(), Some("mcp__gitea__create__pr"));
        assert_eq!(using("gitea.create__pr").as_deref(), Some("gitea.create__pr"));
        assert_eq!(using("search_docs").as_deref(), Some("search_docs"));
        assert_eq!(using("mcp__docs__search").as_deref(), Some("mcp__docs__search"));
        assert_eq!(using("docs.search").as_deref(), Some("docs.search"));
        assert_eq!(using("mcp__gitea__create"), None);
        assert_eq!(using("mcp__Gitea__create__pr"), None);
        assert_eq!(using("gitea.create_pr"), None);
    }

    #[test]
    fn prefixes_name_the_first_match() {
        let inv = Inventory {
            granted: vec![
                grant("github", "list_issues", "github.list_issues"),
                grant("gitea", "list_prs", "gitea.list_prs"),
                grant("gitea", "create_pr", "gitea.create_pr"),
                grant("fetch", "get", "fetch_url"),
            ],
            cli: ["docker-compose", "docker", "podman"].map(String::from).into(),
        };
        let using = |name: &str, kind| available(&cand(name, kind), &inv);
        assert_eq!(using("mcp__gitea__*", ToolKind::Mcp).as_deref(), Some("mcp__gitea__list_prs"));
        assert_eq!(using("gitea.*", ToolKind::Mcp).as_deref(), Some("gitea.list_prs"));
        assert_eq!(using("gitea.create*", ToolKind::Mcp).as_deref(), Some("gitea.create_pr"));
        assert_eq!(using("fetch_*", ToolKind::Mcp).as_deref(), Some("fetch_url"));
        assert_eq!(using("mcp__docker__*", ToolKind::Mcp), None);
        assert_eq!(using("docker*", ToolKind::Cli).as_deref(), Some("docker"));
        assert_eq!(using("docker-*", ToolKind::Cli).as_deref(), Some("docker-compose"));
        assert_eq!(using("kube*", ToolKind::Cli), None);
        let listed = [cand("mcp__gitea__*", ToolKind::Mcp)];
        assert_eq!(line(&listed, &inv), "[skill:git-pr] Using: mcp__gitea__list_prs (MCP)");
    }

    #[test]
    fn http_commands_and_urls() {
        let url = cand("https://api.github.com/repos", ToolKind::Http);
        let using = |c: &Candidate, cli: &[&str]| available(c, &inventory(&[], cli));
        assert_eq!(using(&url, &["curl"]).as_deref(), Some("https://api.github.com/repos"));
        assert_eq!(using(&url, &["wget"]).as_deref(), Some("https://api.github.com/repos"));
        assert_eq!(using(&url, &["gh"]), None);
        assert_eq!(using(&cand("wget", ToolKind::Http), &["wget"]).as_deref(), Some("wget"));
        assert_eq!(using(&cand("xh", ToolKind::Http), &["curl"]), None);
        assert_eq!(line(&[url], &inventory(&[], &["curl"])), "[skill:git-pr] Using: https://api.github.com/repos (HTTP)");
    }

    #[test]
    fn names_are_case_sensitive() {
        assert_eq!(available(&cand("GH", ToolKind::Cli), &inventory(&[], &["gh"])), None);
        assert_eq!(available(&cand("gh", ToolKind::Cli), &inventory(&[], &["gh"])).as_deref(), Some("gh"));
    }

    #[test]
    fn serializes_with_the_outcome_tag() {
        let json = |r: &Resolution| serde_json::to_value(r).expect("serializes");
        assert_eq!(
            json(&Resolution::Using { tool: "gh".into(), kind: ToolKind::Cli }),
            serde_json::json!({"outcome": "using", "tool": "gh", "kind": "CLI"})
        );
        assert_eq!(json(&Resolution::NoTool { capability: "x".into() }), serde_json::json!({"outcome": "no_tool", "capability": "x"}));
    }

    #[test]
    fn resolves_a_parsed_skill() {
        let skill = "# Skill: Check container health\n\n## Tool Discovery\n\n- `docker ps` (CLI)\n- `mcp__docker__list_containers`\n  - Check: listed in the tools.\n";
        let md = super::super::markdown::parse(skill);
        let found = resolve(&md.discovery, &md.capability("container-health"), &inventory(&[], &[])).expect("listed");
        assert_eq!(found.line("container-health"), "[skill:container-health] ERROR: No suitable tool found for Check container health");
        let found = resolve(&md.discovery, "x", &inventory(&[], &["docker"])).expect("listed");
        assert_eq!(
            found.line("container-health"),
            "[skill:container-health] WARNING: mcp__docker__list_containers not found, falling back to docker (CLI)"
        );
    }
}
