//! Native projection: for each agent whose tools run natively (ADR-020), its runner's own
//! MCP configuration — one server entry per granted service, filtered to exactly the
//! granted tools — and `runner.json`, which says what was written, where the container
//! mounts it, which names the model sees and which variables the runner must be given.
//!
//! ```text
//! runners/<agent-id>/runner.json
//! runners/<agent-id>/home/<path>        files under the runner user's home
//! runners/<agent-id>/project/<path>     files under its working directory
//! runners/<agent-id>/data/<path>        files under its data directory (MicroClaw)
//! ```
//!
//! [`plan`] checks what a runner cannot hold (no runner, no filter for a partial grant,
//! HTTP-only tools, names it would mangle) before anything is rendered; [`files`] is pure
//! rendering.

use crate::describe::Transport;
use crate::diag::Diagnostic;
use crate::grant::{GrantedTool, Plan, SecretMode};
use crate::pod::{Execution, Pod};
use crate::registry::Registry;
use crate::runner::native::{Auth, Filter, Secrets, Server};
use crate::runner::{Declared, Runner};
use crate::sourcemap::Loc;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub(crate) use crate::diag::catalogue::project as codes;

/// A tool call's timeout when the agent's `tool-policy` sets none (as in `tools.json`).
const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// MCP's tool-name rule (2025-11-25): what clawc writes into a runner's filter.
const MCP_NAME_MAX: usize = 128;

/// One native agent service's runner projection (its replicas share it).
#[derive(Clone, Debug, Hash)]
pub struct NativePlan {
    pub runner: Runner,
    pub servers: Vec<ServerPlan>,
    /// Every granted tool in grant order: `service.tool` and the name the model sees.
    pub tools: Vec<NativeTool>,
}

#[derive(Clone, Debug, Hash)]
pub struct ServerPlan {
    pub name: String,
    pub url: String,
    pub granted: Vec<String>,
    pub denied: Vec<String>,
    pub timeout_ms: u64,
    pub auth: Option<TokenPlan>,
}

#[derive(Clone, Debug, Hash)]
pub struct TokenPlan {
    pub env: String,
    /// How the runner refers to the variable; `None`: it cannot, the literal is needed.
    pub reference: Option<String>,
    pub value: Option<String>,
}

#[derive(Clone, Debug, Hash, Serialize)]
pub struct NativeTool {
    /// `service.tool`.
    pub grant: String,
    /// The name the runner shows the model.
    pub name: String,
}

impl NativePlan {
    /// The model-visible name of granted tool `service.tool`, if granted.
    pub(crate) fn name_of(&self, grant: &str) -> Option<&str> {
        self.tools.iter().find(|t| t.grant == grant).map(|t| t.name.as_str())
    }

    /// Variables the runner's environment must hold (token variables it reads itself).
    fn environment(&self) -> Vec<&str> {
        let vars: BTreeSet<&str> =
            self.servers.iter().filter_map(|s| s.auth.as_ref().filter(|a| a.reference.is_some()).map(|a| a.env.as_str())).collect();
        vars.into_iter().collect()
    }

    /// Variables whose literal value the files need (`--secrets inline`).
    fn literals(&self) -> Vec<&str> {
        let vars: BTreeSet<&str> =
            self.servers.iter().filter_map(|s| s.auth.as_ref().filter(|a| a.reference.is_none()).map(|a| a.env.as_str())).collect();
        vars.into_iter().collect()
    }
}

/// The name an agent's model sees for granted tool `name`: its native runner's name,
/// else cllama's alias.
pub(crate) fn shown_name(native: Option<&NativePlan>, name: &crate::describe::ToolName<'_>) -> String {
    native.and_then(|n| n.name_of(&name.to_string())).map_or_else(|| name.alias(), str::to_string)
}

/// Plans every native agent that has granted tools; reports what its runner cannot hold.
pub(crate) fn plan(pod: &Pod, reg: &Registry, plans: &BTreeMap<String, Plan>) -> (BTreeMap<String, NativePlan>, Vec<Diagnostic>) {
    let mut out = BTreeMap::new();
    let mut diags = Vec::new();
    for (service, plan) in plans {
        let Some(claw) = pod.services[service].claw.as_ref() else { continue };
        if claw.execution != Execution::Native || plan.tools.is_empty() {
            continue;
        }
        let loc = plan.tools[0].via.grant;
        let Some(runner) = runner_of(reg, service, loc, &mut diags) else { continue };
        let timeout_ms = claw.tool_policy.timeout_per_tool_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        let mut p = Planner { service, runner, reg, diags: &mut diags };
        if let Some(native) = p.plan(&plan.tools, timeout_ms) {
            out.insert(service.clone(), native);
        }
    }
    (out, crate::diag::cap(diags))
}

fn runner_of(reg: &Registry, service: &str, loc: Loc, diags: &mut Vec<Diagnostic>) -> Option<Runner> {
    let fact = reg.runners.get(service);
    if let Some(Declared::Known(r)) = fact.map(|f| &f.runner) {
        return Some(*r);
    }
    let known = Runner::names().collect::<Vec<_>>().join(", ");
    let msg = match fact {
        Some(f) => format!(
            "service \"{service}\": its tools run natively, but its runner \"{}\" ({}) is not one clawc can configure",
            f.runner.as_str(),
            f.from
        ),
        None => format!("service \"{service}\": its tools run natively, but clawc does not know its runner"),
    };
    let help = format!(
        "name the runner with the image label `claw.type`, `CLAW_TYPE` in its Clawfile, or `--runner {service}=TYPE` (one of: {known}); or have its tools mediated: give it a cllama proxy (`cllama: passthrough`)"
    );
    diags.push(Diagnostic::error(codes::NO_RUNNER, msg).at(loc).help(help));
    None
}

struct Planner<'a, 'd> {
    service: &'a str,
    runner: Runner,
    reg: &'a Registry,
    diags: &'d mut Vec<Diagnostic>,
}

impl Planner<'_, '_> {
    fn error(&mut self, code: crate::diag::Code, msg: String, loc: Loc, help: &str) {
        let msg = format!("service \"{}\": {msg}", self.service);
        self.diags.push(Diagnostic::error(code, msg).at(loc).help(help.to_string()));
    }

    fn plan(&mut self, tools: &[GrantedTool], timeout_ms: u64) -> Option<NativePlan> {
        let before = self.diags.len();
        let mut order: Vec<&str> = Vec::new();
        let mut by_service: HashMap<&str, Vec<&GrantedTool>> = HashMap::new();
        for g in tools {
            if !by_service.contains_key(&*g.service) {
                order.push(&g.service);
            }
            by_service.entry(&g.service).or_default().push(g);
        }
        let mut servers = Vec::new();
        let mut keys: HashMap<String, &str> = HashMap::new();
        for svc in order {
            let granted = &by_service[svc];
            let loc = granted[0].via.grant;
            if let Some(s) = self.server(svc, granted, timeout_ms) {
                let key = self.runner.spec().native.names.server_key(svc);
                if let Some(other) = keys.insert(key.clone(), svc) {
                    let msg = format!("{} names servers \"{other}\" and \"{svc}\" both \"{key}\"", self.runner);
                    self.error(codes::BAD_SERVER_NAME, msg, loc, "rename one of the two services, or grant only one of them to this agent");
                }
                servers.push(s);
            }
        }
        if self.diags.len() != before {
            // Names are checked once the servers hold; a clash of servers would repeat as
            // a clash of every tool name.
            return None;
        }
        let names = self.model_names(tools);
        (self.diags.len() == before).then_some(NativePlan { runner: self.runner, servers, tools: names })
    }

    /// One server entry, or `None` after reporting why the runner cannot hold it.
    fn server(&mut self, svc: &str, granted: &[&GrantedTool], timeout_ms: u64) -> Option<ServerPlan> {
        let loc = granted[0].via.grant;
        let native = self.runner.spec().native;
        let desc = &self.reg.services[svc].descriptor;
        let Some(mcp) = desc.mcp.as_ref() else {
            let tool = self.reg.tool_name(svc, granted[0].index).to_string();
            let msg =
                format!("tool \"{tool}\" is an HTTP route of \"{svc}\", which has no MCP endpoint; a native runner loads MCP servers only");
            self.error(
                codes::HTTP_ONLY_TOOL,
                msg,
                loc,
                "have the agent's tools mediated: give it a cllama proxy (`cllama: passthrough`), which calls HTTP routes for it",
            );
            return None;
        };
        if !valid_server_name(svc) {
            let msg = format!(
                "\"{svc}\" cannot name a {} MCP server: server names must start with a letter and hold only letters, digits, `-` and `_`, with no `__`",
                self.runner
            );
            self.error(codes::BAD_SERVER_NAME, msg, loc, "rename the service (runners split `<server>__<tool>` and refuse dots in names)");
            return None;
        }
        let raw: Vec<String> = granted.iter().map(|g| mcp_name(self.reg, g)).collect();
        if native.filter == Filter::None && granted.len() < desc.tools.len() {
            let msg = format!(
                "{} cannot filter tools per server, and the agent is granted {} of the {} tools of \"{svc}\"",
                self.runner,
                granted.len(),
                desc.tools.len()
            );
            self.error(codes::RUNNER_CANNOT_FILTER, msg, loc, "grant all of the service's tools (`allow: all`), or have them mediated: give the agent a cllama proxy (`cllama: passthrough`)");
            return None;
        }
        let granted_set: BTreeSet<&str> = raw.iter().map(String::as_str).collect();
        let denied = desc
            .tools
            .iter()
            .map(|t| match &t.transport {
                Transport::Mcp { tool_name, .. } => tool_name.clone(),
                Transport::Http { .. } => t.name.clone(),
            })
            .filter(|n| !granted_set.contains(n.as_str()))
            .collect();
        let auth = granted[0].auth.as_ref().map(|t| TokenPlan {
            env: t.env.clone(),
            reference: native.secrets.reference(&t.env),
            value: t.value.clone(),
        });
        Some(ServerPlan {
            name: svc.to_string(),
            url: format!("{}{}", granted[0].base_url, mcp.path),
            granted: raw,
            denied,
            timeout_ms,
            auth,
        })
    }

    /// The model-visible name of every granted tool, checked against the provider's rule
    /// and for collisions.
    fn model_names(&mut self, tools: &[GrantedTool]) -> Vec<NativeTool> {
        let native = self.runner.spec().native;
        let mut seen: HashMap<String, String> = HashMap::new();
        let mut out = Vec::new();
        for g in tools {
            let raw = mcp_name(self.reg, g);
            let grant = self.reg.tool_name(&g.service, g.index).to_string();
            let name = native.names.model(&g.service, &raw);
            let loc = g.via.grant;
            if raw.is_empty() || raw.len() > MCP_NAME_MAX || !raw.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)) {
                let msg = format!(
                    "tool \"{grant}\" has a name outside MCP's tool-name rule (1 to {MCP_NAME_MAX} of A-Z a-z 0-9 _ - .), which {} cannot be given",
                    self.runner
                );
                self.error(
                    codes::BAD_MODEL_NAME,
                    msg,
                    loc,
                    "rename the tool in its service, or have the agent's tools mediated: give it a cllama proxy (`cllama: passthrough`)",
                );
                continue;
            }
            if name.len() > native.names.max || !name.chars().all(|c| native.names.allows(c)) {
                let msg = format!(
                    "{} would show tool \"{grant}\" to its model as \"{name}\", which is longer than {} characters or holds characters the model provider refuses",
                    self.runner, native.names.max
                );
                self.error(
                    codes::BAD_MODEL_NAME,
                    msg,
                    loc,
                    "use a shorter service or tool name, or have the agent's tools mediated: give it a cllama proxy (`cllama: passthrough`), whose alias fits every provider",
                );
                continue;
            }
            if let Some(other) = seen.insert(name.clone(), grant.clone()) {
                let msg = format!("{} would show tool \"{grant}\" to its model as \"{name}\", as it shows \"{other}\"", self.runner);
                self.error(codes::BAD_MODEL_NAME, msg, loc, "grant only one of the two, or rename one of them");
                continue;
            }
            out.push(NativeTool { grant, name });
        }
        out
    }
}

/// The name `tools/call` is sent with (a descriptor's MCP tool), else its declared name.
fn mcp_name(reg: &Registry, g: &GrantedTool) -> String {
    let t = reg.tool(&g.service, g.index);
    match &t.transport {
        Transport::Mcp { tool_name, .. } => tool_name.clone(),
        Transport::Http { .. } => t.name.clone(),
    }
}

/// `^[A-Za-z][A-Za-z0-9_-]*$` without `__`: survives every runner's `<server>__<tool>`
/// split and every provider's name rule.
fn valid_server_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic()) && b.all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_') && !s.contains("__")
}

/// Warnings for runners that cannot read a token from their environment (redact mode).
pub(crate) fn warnings(natives: &BTreeMap<String, NativePlan>, pod: &Pod, mode: SecretMode) -> Vec<Diagnostic> {
    if mode == SecretMode::Inline {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (service, p) in natives {
        let vars = p.literals();
        if vars.is_empty() {
            continue;
        }
        let Some(claw) = pod.services[service].claw.as_ref().map(|c| c.loc) else { continue };
        let msg = format!(
            "service \"{service}\": {} cannot read {} from its environment, so its config holds a `${{VAR}}` placeholder",
            p.runner,
            vars.join(", ")
        );
        out.push(
            Diagnostic::warning(codes::NEEDS_INLINE_SECRET, msg)
                .at(claw)
                .help("compile with `--secrets inline` at deploy time (the file is then written 0600 and must not be committed)"),
        );
    }
    out
}

/// An agent's runner files and `runner.json`: (path under `runners/<id>/`, bytes, whether
/// it holds a literal token).
pub(crate) fn files(id: &str, service: &str, p: &NativePlan, mode: SecretMode) -> Vec<(String, Vec<u8>, bool)> {
    let native = p.runner.spec().native;
    let mut secret = false;
    let servers: Vec<Server> = p
        .servers
        .iter()
        .map(|s| {
            let auth = s.auth.as_ref().map(|a| {
                let token = match (&a.reference, &a.value) {
                    (Some(r), _) => r.clone(),
                    (None, Some(v)) if mode == SecretMode::Inline => {
                        secret = true;
                        v.clone()
                    }
                    (None, _) => format!("${{{}}}", a.env),
                };
                let header = if native.secrets == Secrets::EnvName { String::new() } else { format!("Bearer {token}") };
                Auth { env: a.env.clone(), header }
            });
            Server {
                name: s.name.clone(),
                url: s.url.clone(),
                granted: s.granted.clone(),
                denied: s.denied.clone(),
                timeout_ms: s.timeout_ms,
                auth,
            }
        })
        .collect();
    let rendered = (native.render)(&servers);
    let mut out: Vec<(String, Vec<u8>, bool)> =
        native.files.iter().zip(rendered).map(|(f, bytes)| (format!("{}/{}", f.root.dir(), f.path), bytes, secret)).collect();
    out.push(("runner.json".to_string(), runner_json(id, service, p, mode), false));
    out
}

#[derive(Serialize)]
struct RunnerJson<'a> {
    version: u32,
    agent: &'a str,
    service: &'a str,
    runner: &'static str,
    filter: Filter,
    files: Vec<FileJson>,
    servers: Vec<ServerJson<'a>>,
    tools: &'a [NativeTool],
    /// Variables the runner's environment must hold.
    environment: Vec<&'a str>,
    /// Variables whose literal value its files hold (`--secrets inline`) or need
    /// (placeholder in redact mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    inline_secrets: Vec<&'a str>,
    secrets: &'static str,
}

#[derive(Serialize)]
struct FileJson {
    path: String,
    role: &'static str,
    /// Where the container reads it.
    mount: String,
}

#[derive(Serialize)]
struct ServerJson<'a> {
    name: &'a str,
    url: &'a str,
    tools: &'a [String],
}

fn runner_json(id: &str, service: &str, p: &NativePlan, mode: SecretMode) -> Vec<u8> {
    let native = p.runner.spec().native;
    let files = native
        .files
        .iter()
        .map(|f| FileJson { path: format!("{}/{}", f.root.dir(), f.path), role: f.role, mount: native.mount(f) })
        .collect();
    let literals = p.literals();
    let secrets = match (literals.is_empty(), mode) {
        (true, _) => "references",
        (false, SecretMode::Inline) => "inline",
        (false, SecretMode::Redact) => "placeholder",
    };
    let doc = RunnerJson {
        version: 1,
        agent: id,
        service,
        runner: p.runner.name(),
        filter: native.filter,
        files,
        servers: p.servers.iter().map(|s| ServerJson { name: &s.name, url: &s.url, tools: &s.granted }).collect(),
        tools: &p.tools,
        environment: p.environment(),
        inline_secrets: literals,
        secrets,
    };
    crate::artifact::json::to_go_json(&doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_that_survive_every_runner() {
        for ok in ["loop", "trading-api", "a_b", "A1"] {
            assert!(valid_server_name(ok), "{ok}");
        }
        for bad in ["", "1api", "a.b", "a__b", "-x", "a b"] {
            assert!(!valid_server_name(bad), "{bad}");
        }
    }
}
