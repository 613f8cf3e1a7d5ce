//! `CLAWDAPUS.md`, the agent-facing description of its environment, rendered from
//! `templates/CLAWDAPUS.md.j2`. The `## Tools` and `## Ambient Memory` sections follow
//! Clawdapus' verified line format byte for byte; the rest matches its content.

use crate::describe::AuthType;
use crate::grant::Plan;
use crate::pod::{Claw, Pod};
use crate::registry::Registry;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, syntax::SyntaxConfig};
use serde::Serialize;
use std::sync::OnceLock;

const TEMPLATE: &str = include_str!("../../templates/CLAWDAPUS.md.j2");

fn env() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        let syntax = SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
            .expect("static syntax config is valid");
        env.set_syntax(syntax);
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.add_template("CLAWDAPUS.md", TEMPLATE).expect("the bundled template parses");
        env
    })
}

#[derive(Serialize)]
struct Ctx<'a> {
    pod: &'a str,
    agent: &'a str,
    claw_type: Option<&'a str>,
    surfaces: Vec<SurfaceCtx<'a>>,
    cllama: Option<CllamaCtx>,
    feeds: Vec<FeedCtx<'a>>,
    skills: Vec<SkillCtx>,
    tools: Vec<ToolCtx<'a>>,
    memory: Option<MemoryCtx<'a>>,
}

#[derive(Serialize)]
struct SurfaceCtx<'a> {
    scheme: &'a str,
    target: &'a str,
    access: Option<&'a str>,
    url: Option<String>,
    description: Option<&'a str>,
    auth: Option<String>,
    skill: Option<&'a str>,
    endpoints: Vec<EndpointCtx<'a>>,
}

#[derive(Serialize)]
struct EndpointCtx<'a> {
    method: &'a str,
    path: &'a str,
    description: &'a str,
}

#[derive(Serialize)]
struct CllamaCtx {
    service: String,
    mode: String,
    chain: Option<String>,
}

#[derive(Serialize)]
struct FeedCtx<'a> {
    name: String,
    source: &'a str,
    ttl: u64,
    description: &'a str,
}

#[derive(Serialize)]
struct SkillCtx {
    name: String,
    why: String,
}

#[derive(Serialize)]
struct ToolCtx<'a> {
    alias: String,
    canonical: String,
    description: &'a str,
}

#[derive(Serialize)]
struct MemoryCtx<'a> {
    service: &'a str,
    recall: bool,
    retain: bool,
}

/// `claw_type` is the agent's runner (its image's `claw.type` label), when known.
pub(crate) fn render(pod: &Pod, reg: &Registry, claw: &Claw, agent: &str, plan: &Plan, claw_type: Option<&str>) -> Vec<u8> {
    let mut skills = Vec::new();
    let surfaces = claw
        .surfaces
        .iter()
        .map(|s| {
            let mut ctx = SurfaceCtx {
                scheme: &s.scheme,
                target: &s.target,
                access: s.access.as_deref(),
                url: None,
                description: None,
                auth: None,
                skill: None,
                endpoints: Vec::new(),
            };
            if s.scheme != "service" {
                return ctx;
            }
            if pod.services.contains_key(&s.target) {
                ctx.url = Some(pod.base_url(&s.target));
            }
            if let Some(d) = reg.services.get(&s.target) {
                let desc = &d.descriptor;
                ctx.description = Some(desc.description.as_str()).filter(|d| !d.is_empty());
                ctx.auth = desc.auth.as_ref().map(|a| match (a.kind, a.env.as_str()) {
                    (AuthType::Bearer, "") => "Bearer token".to_string(),
                    (AuthType::Bearer, env) => format!("Bearer token (`{env}`)"),
                    (AuthType::Header, _) => "Header".to_string(),
                    (AuthType::None, _) => "None".to_string(),
                });
                if let Some(skill) = &d.skill {
                    ctx.skill = Some(skill.name.as_str());
                    skills.push(SkillCtx { name: skill.name.clone(), why: format!("{} service surface", s.target) });
                }
                // Endpoints are shown only for services without tools (ADR-020): tools replace them.
                if desc.tools.is_empty() {
                    ctx.endpoints = desc
                        .endpoints
                        .iter()
                        .map(|e| EndpointCtx { method: &e.method, path: &e.path, description: &e.description })
                        .collect();
                }
            }
            ctx
        })
        .collect();
    for s in &claw.skills {
        let name = crate::describe::service::basename(&s.value);
        if !["handle-", "surface-", "include-"].iter().any(|p| name.starts_with(p)) {
            skills.push(SkillCtx { name: name.to_string(), why: "operator-provided skill".to_string() });
        }
    }
    let cllama = (!claw.cllama.is_empty()).then(|| {
        let first = &claw.cllama[0];
        CllamaCtx {
            service: if first == "passthrough" { "cllama".to_string() } else { format!("cllama-{first}") },
            mode: first.clone(),
            chain: (claw.cllama.len() > 1).then(|| claw.cllama.join(" -> ")),
        }
    });
    let feeds = plan
        .feeds
        .iter()
        .map(|f| FeedCtx { name: f.name_for(agent), source: &f.source, ttl: f.ttl, description: &f.description })
        .collect();
    let tools = plan
        .tools
        .iter()
        .map(|g| {
            let name = reg.tool_name(&g.service, g.index);
            ToolCtx { alias: name.alias(), canonical: name.to_string(), description: &reg.tool(&g.service, g.index).description }
        })
        .collect();
    let memory =
        plan.memory.as_ref().map(|m| MemoryCtx { service: &m.service, recall: m.ops.recall.is_some(), retain: m.ops.retain.is_some() });
    let ctx = Ctx { pod: &pod.name, agent, claw_type, surfaces, cllama, feeds, skills, tools, memory };
    let tmpl = env().get_template("CLAWDAPUS.md").expect("the bundled template is registered");
    tmpl.render(minijinja::value::Value::from(minijinja::value::Serde(&ctx)))
        .expect("the bundled template renders every context")
        .into_bytes()
}
