//! Questions about access, answered from the resolved grants (never recomputed): which
//! agents can call a tool and through which grant (`who-can`), why an agent can or cannot
//! call a tool and the smallest grant that would change it (`explain`), and the
//! agents × tools matrix (`report --matrix`).

use crate::compile::Analysis;
use crate::describe::ServiceDescriptor;
use crate::describe::Tool;
use crate::describe::{ToolName, Transport};
use crate::diag::{Diagnostic, suggest};
use crate::grant::{GrantedTool, Provenance};
use crate::pod::{Allow, Origin, Role};
use crate::sourcemap::SourceMap;
use serde::Serialize;

pub(crate) use crate::diag::catalogue::access as codes;

/// `read-only`, `side-effecting` or `unannotated`, from the tool's annotations.
pub(crate) fn effect(tool: &Tool) -> &'static str {
    tool.effect()
}

/// Where a grant is, as `file:line:column`.
pub(crate) fn at(via: &Provenance, sources: &SourceMap) -> String {
    format!("{}:{}:{}", sources.name(via.grant.file), via.grant.span.line, via.grant.span.col)
}

/// How a grant reached the agent, in words.
pub(crate) fn route(via: &Provenance, sources: &SourceMap) -> String {
    match via.origin {
        Origin::Service => "the agent's own `tools:`".to_string(),
        Origin::Defaults { spread: None } => "pod `tools-defaults` (the agent declares no `tools:`)".to_string(),
        Origin::Defaults { spread: Some(l) } => {
            format!("pod `tools-defaults`, spliced by `...` at {}:{}", sources.name(l.file), l.span.line)
        }
        Origin::Wall => {
            "the conversation wall (claw up grants its tools to a cllama agent whose Discord handle lists channels)".to_string()
        }
    }
}

/// The name agent service `consumer`'s model sees for granted tool `service.tool`: its
/// native runner's name, else cllama's alias.
pub(crate) fn shown_as(a: &Analysis, consumer: &str, service: &str, index: usize) -> String {
    crate::project::native::shown_name(a.native.get(consumer), &a.registry.tool_name(service, index))
}

/// How agent service `consumer`'s tools run: its native runner's name, else `cllama`.
pub(crate) fn executor(a: &Analysis, consumer: &str) -> &'static str {
    a.native.get(consumer).map_or("cllama", |n| n.runner.name())
}

/// Agent ids of the pod, sorted, each with its service.
pub(crate) fn agents(a: &Analysis) -> Vec<(String, &str)> {
    let mut out: Vec<(String, &str)> = a
        .pod
        .services
        .iter()
        .filter_map(|(name, s)| s.claw.as_ref().filter(|c| c.role == Role::Agent).map(|c| (name.as_str(), c)))
        .flat_map(|(name, c)| c.agent_ids(name).into_iter().map(move |id| (id, name)))
        .collect();
    out.sort();
    out
}

/// The service an agent id (or service name) belongs to.
pub(crate) fn agent_service<'a>(a: &'a Analysis, agent: &str) -> Result<&'a str, Diagnostic> {
    let all = agents(a);
    if let Some((_, svc)) = all.iter().find(|(id, s)| id == agent || *s == agent) {
        return Ok(a.pod.services.get_key_value(*svc).map(|(k, _)| k.as_str()).expect("agents come from the pod"));
    }
    let help =
        suggest(agent, all.iter().map(|(id, _)| id.as_str()), "name an agent id (a service with x-claw, or <service>-<n> for replicas)");
    Err(Diagnostic::error(codes::UNKNOWN_AGENT, format!("\"{agent}\" is not an agent of this pod")).help(help))
}

/// Resolves `service.tool` (tool names may contain dots) or a bare service name.
pub(crate) fn target<'a>(a: &'a Analysis, text: &str) -> Result<(&'a str, &'a ServiceDescriptor, Option<usize>), Diagnostic> {
    if let Some(d) = a.registry.services.get_key_value(text).filter(|(_, d)| !d.descriptor.tools.is_empty()) {
        return Ok((d.0, d.1, None));
    }
    for (i, _) in text.match_indices('.') {
        let (svc, tool) = (&text[..i], &text[i + 1..]);
        if let Some((name, d)) = a.registry.services.get_key_value(svc)
            && let Some(idx) = d.descriptor.tools.iter().position(|t| t.name == tool)
        {
            return Ok((name, d, Some(idx)));
        }
    }
    // A known service with an unknown tool: suggest among that service's tools.
    for (i, _) in text.match_indices('.') {
        if let Some(d) = a.registry.services.get(&text[..i]).filter(|d| !d.descriptor.tools.is_empty()) {
            let names: Vec<String> = d.descriptor.tools.iter().map(|t| ToolName::new(&text[..i], &t.name).to_string()).collect();
            let help = suggest(text, names.iter().map(String::as_str), format!("`{}` declares: {}", &text[..i], names.join(", ")));
            return Err(Diagnostic::error(codes::UNKNOWN_TARGET, format!("\"{text}\" is not a tool of this pod")).help(help));
        }
    }
    let all: Vec<String> = a
        .registry
        .tool_services()
        .flat_map(|(s, d)| {
            std::iter::once(s.to_string()).chain(d.descriptor.tools.iter().map(move |t| ToolName::new(s, &t.name).to_string()))
        })
        .collect();
    let help =
        suggest(text, all.iter().map(String::as_str), "name a tool as <service>.<tool>, or a service whose descriptor declares tools");
    Err(Diagnostic::error(codes::UNKNOWN_TARGET, format!("\"{text}\" is neither a tool nor a tool service of this pod")).help(help))
}

#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    pub agent: String,
    pub tool: String,
    /// The name the agent's model sees.
    pub shown_as: String,
    /// What presents and runs the tool: the native runner, or `cllama`.
    pub via_runner: &'static str,
    pub grant: String,
    pub via: String,
    pub allow: &'static str,
}

/// Every agent that can call the target's tools, and through which grant.
pub(crate) fn who_can(a: &Analysis, sources: &SourceMap, service: &str, tool: Option<usize>) -> Vec<Holder> {
    let mut out = Vec::new();
    for (id, svc) in agents(a) {
        for g in a.plans.get(svc).map_or(&[][..], |p| &p.tools) {
            if *g.service == *service && tool.is_none_or(|t| t == g.index) {
                let name = a.registry.tool_name(service, g.index).to_string();
                out.push(Holder {
                    agent: id.clone(),
                    tool: name,
                    shown_as: shown_as(a, svc, service, g.index),
                    via_runner: executor(a, svc),
                    grant: at(&g.via, sources),
                    via: route(&g.via, sources),
                    allow: if g.via.all { "all" } else { "named" },
                });
            }
        }
    }
    out
}

#[derive(Serialize, Debug, Clone)]
pub(crate) struct Step {
    pub step: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    pub text: String,
}

#[derive(Serialize, Debug, Clone)]
pub(crate) struct Explanation {
    pub agent: String,
    pub service: String,
    pub tool: String,
    /// The name the model sees (the native runner's when it is granted natively).
    pub alias: String,
    /// The native runner that loads the tool, when the agent's tools run natively.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<&'static str>,
    pub granted: bool,
    /// Granted: pod default → spread → grant line → descriptor → tool.
    pub chain: Vec<Step>,
    /// Not granted: why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
    /// Not granted: the smallest change to the pod that grants it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

fn granted_chain(g: &GrantedTool, d: &ServiceDescriptor, tool: &Tool, sources: &SourceMap) -> Vec<Step> {
    let mut chain = Vec::new();
    let grant_at = Some(at(&g.via, sources));
    match g.via.origin {
        Origin::Service => {}
        Origin::Defaults { spread } => {
            chain.push(Step { step: "pod default", at: grant_at.clone(), text: "declared in the pod's `tools-defaults`".to_string() });
            match spread {
                None => chain.push(Step {
                    step: "inherited",
                    at: None,
                    text: "the agent declares no `tools:`, so it inherits `tools-defaults`".to_string(),
                }),
                Some(l) => chain.push(Step {
                    step: "spread",
                    at: Some(format!("{}:{}:{}", sources.name(l.file), l.span.line, l.span.col)),
                    text: "`...` in the agent's `tools:` splices the defaults in here".to_string(),
                }),
            }
        }
        Origin::Wall => chain.push(Step {
            step: "conversation wall",
            at: grant_at.clone(),
            text:
                "this cllama agent's Discord handle lists channels, so claw up injects the conversation wall and grants it the wall's tools"
                    .to_string(),
        }),
    }
    let allow =
        if g.via.all { "gives all its tools (`allow: all` or a bare service name)".to_string() } else { format!("names `{}`", tool.name) };
    chain.push(Step { step: "grant", at: grant_at, text: format!("the grant on `{}` {allow}", g.service) });
    let origin = d.origin.as_str();
    chain.push(Step {
        step: "descriptor",
        at: Some(sources.name(d.file).to_string()),
        text: match d.origin {
            crate::origin::OriginKind::BuiltIn => format!("version {} descriptor, built into claw up", d.descriptor.version),
            _ => format!("version {} descriptor, from the {origin}", d.descriptor.version),
        },
    });
    let exec = match &tool.transport {
        Transport::Http { method, path, .. } => format!("{method} {path}"),
        Transport::Mcp { path, tool_name } => format!("MCP tool `{tool_name}` at {path}"),
    };
    chain.push(Step { step: "tool", at: None, text: format!("{} — {} [{}], runs as {exec}", tool.name, tool.description, effect(tool)) });
    chain
}

/// Why `agent` can or cannot call `service.tools[tool]`.
pub(crate) fn explain(a: &Analysis, sources: &SourceMap, agent: &str, service: &str, tool: usize) -> Explanation {
    let consumer = agent_service(a, agent).expect("callers resolve the agent first");
    let d = &a.registry.services[service];
    let t = &d.descriptor.tools[tool];
    let name = ToolName::new(service, &t.name);
    let mut e = Explanation {
        agent: agent.to_string(),
        service: consumer.to_string(),
        tool: name.to_string(),
        alias: name.alias(),
        runner: a.native.get(consumer).map(|n| n.runner.name()),
        granted: false,
        chain: Vec::new(),
        why_not: None,
        suggestion: None,
    };
    let plan = a.plans.get(consumer);
    if let Some(g) = plan.and_then(|p| p.tools.iter().find(|g| *g.service == *service && g.index == tool)) {
        e.granted = true;
        e.chain = granted_chain(g, d, t, sources);
        e.alias = shown_as(a, consumer, service, tool);
        if let Some(n) = a.native.get(consumer) {
            let url = n.servers.iter().find(|s| s.name == service).map_or("", |s| s.url.as_str());
            let text = format!(
                "{} loads it natively from {url} (its filter: {}), as `{}`",
                n.runner,
                n.runner.spec().native.filter.describe(),
                e.alias
            );
            e.chain.push(Step { step: "runner", at: Some(format!("runners/{agent}/runner.json")), text });
        }
        return e;
    }
    let claw = a.pod.services[consumer].claw.as_ref().expect("agents have x-claw");
    let on_service: Vec<&crate::pod::Grant> = claw.tools.iter().filter(|g| g.service.value == service).collect();
    e.why_not = Some(if claw.tools.is_empty() && claw.tools_declared {
        format!("\"{consumer}\" declares `tools: []`: it is granted nothing")
    } else if claw.tools.is_empty() {
        format!("\"{consumer}\" declares no `tools:` and the pod has no `tools-defaults`: deny by default")
    } else if on_service.is_empty() {
        format!("no grant of \"{consumer}\" names the service `{service}`")
    } else {
        let named: Vec<String> = on_service
            .iter()
            .flat_map(|g| match &g.allow {
                Allow::Named(n) => n.iter().map(|s| s.value.clone()).collect(),
                Allow::All => Vec::new(),
            })
            .collect();
        format!("the grants of \"{consumer}\" on `{service}` name only: {}", named.join(", "))
    });
    e.suggestion = Some(suggestion(consumer, claw, service, &t.name, sources));
    e
}

/// The smallest edit of the pod that grants the tool (and keeps every existing grant).
fn suggestion(consumer: &str, claw: &crate::pod::Claw, service: &str, tool: &str, sources: &SourceMap) -> String {
    let own_named =
        claw.tools.iter().find(|g| g.service.value == service && g.origin == Origin::Service && matches!(g.allow, Allow::Named(_)));
    if let Some(g) = own_named {
        let Allow::Named(names) = &g.allow else { unreachable!("filtered to named grants") };
        let mut list: Vec<&str> = names.iter().map(|n| n.value.as_str()).collect();
        list.push(tool);
        return format!("in \"{consumer}\", at {}:{}: `allow: [{}]`", sources.name(g.loc.file), g.loc.span.line, list.join(", "));
    }
    let entry = format!("- service: {service}\n    allow: [{tool}]");
    if claw.tools_declared {
        return format!("add to the `tools:` of \"{consumer}\":\n  {entry}");
    }
    if claw.tools.is_empty() {
        return format!("give \"{consumer}\" a `tools:` list:\n  tools:\n    {}", entry.replace('\n', "\n  "));
    }
    // It inherits tools-defaults: a `tools:` key replaces them unless it keeps `...`.
    format!("give \"{consumer}\" a `tools:` list that keeps the defaults:\n  tools:\n    - ...\n    {}", entry.replace('\n', "\n  "))
}

/// The agents × tools access matrix.
#[derive(Serialize, Debug, Clone)]
pub(crate) struct Matrix {
    pub agents: Vec<String>,
    /// Per agent: its native runner, or `cllama` when its tools are mediated.
    pub runners: Vec<&'static str>,
    pub rows: Vec<MatrixRow>,
}

#[derive(Serialize, Debug, Clone)]
pub(crate) struct MatrixRow {
    pub tool: String,
    pub effect: &'static str,
    /// One per agent, in `agents` order.
    pub granted: Vec<bool>,
}

pub(crate) fn matrix(a: &Analysis) -> Matrix {
    let agents = agents(a);
    let mut rows = Vec::new();
    for (svc, d) in a.registry.tool_services() {
        for (i, t) in d.descriptor.tools.iter().enumerate() {
            let granted = agents
                .iter()
                .map(|(_, s)| a.plans.get(*s).is_some_and(|p| p.tools.iter().any(|g| *g.service == *svc && g.index == i)))
                .collect();
            rows.push(MatrixRow { tool: format!("{svc}.{}", t.name), effect: effect(t), granted });
        }
    }
    let runners = agents.iter().map(|(_, s)| executor(a, s)).collect();
    Matrix { agents: agents.into_iter().map(|(id, _)| id).collect(), runners, rows }
}
