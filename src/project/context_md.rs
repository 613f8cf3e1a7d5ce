//! `CLAWDAPUS.md`, the agent-facing description of its environment, rendered from
//! `templates/CLAWDAPUS.md.j2`. Identity, persona, surfaces, handles, skills, included
//! context, `## Tools` and `## Ambient Memory` follow Clawdapus' generator line by line
//! (`internal/driver/shared/clawdapus_md.go` and `augmentClawdapusMD`); the service
//! surface details and feeds match the content of its newer additions. Deliberate
//! differences are in docs/guide.md (CLAWDAPUS.md).

use crate::describe::AuthType;
use crate::grant::Plan;
use crate::pod::{Claw, Handle, Pod};
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
    persona: Option<&'a str>,
    surfaces: Vec<SurfaceCtx<'a>>,
    cllama: Option<CllamaCtx>,
    handles: Vec<HandleCtx<'a>>,
    feeds: Vec<FeedCtx<'a>>,
    skills: Vec<SkillCtx>,
    /// SPEC-0023 tool resolution, a line per skill.
    resolution: Vec<String>,
    tools: Vec<ToolCtx<'a>>,
    /// The runner that loads the tools natively (else cllama presents them).
    tools_runner: Option<&'static str>,
    memory: Option<MemoryCtx<'a>>,
    includes: Vec<IncludeCtx<'a>>,
}

#[derive(Serialize)]
struct HandleCtx<'a> {
    platform: &'a str,
    id: &'a str,
    username: &'a str,
    guilds: Vec<GuildCtx<'a>>,
}

#[derive(Serialize)]
struct GuildCtx<'a> {
    id: &'a str,
    name: &'a str,
    /// (id, name) pairs.
    channels: Vec<(&'a str, &'a str)>,
}

#[derive(Serialize)]
struct IncludeCtx<'a> {
    id: &'a str,
    mode: &'a str,
    description: &'a str,
    /// The mounted skill, for `reference` includes.
    skill: Option<String>,
    file: &'a str,
}

#[derive(Serialize)]
struct SurfaceCtx<'a> {
    scheme: &'a str,
    target: &'a str,
    access: Option<&'a str>,
    url: Option<String>,
    description: Option<&'a str>,
    auth: Option<String>,
    skill: Option<String>,
    /// A channel surface's bot token variable.
    token: Option<&'static str>,
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

/// One agent service, as its `CLAWDAPUS.md` needs it. `claw_type` is its runner (its
/// image's `claw.type` label), when known; `native` its runner projection when its tools
/// run natively (they are listed by the names its runner shows the model); `skills` its
/// merged and judged skills.
pub(crate) struct Agent<'a> {
    pub claw: &'a Claw,
    pub plan: &'a Plan,
    pub claw_type: Option<&'a str>,
    pub native: Option<&'a super::native::NativePlan>,
    pub skills: &'a [crate::skill::carried::Judged],
}

pub(crate) fn render(pod: &Pod, reg: &Registry, a: &Agent<'_>, agent: &str) -> String {
    let Agent { claw, plan, claw_type, native, skills: judged } = *a;
    // Handle skills first, by platform (the map is sorted), then surface skills in surface order.
    let mut skills: Vec<SkillCtx> =
        claw.handles.keys().map(|p| SkillCtx { name: format!("handle-{p}.md"), why: format!("{p} channel identity") }).collect();
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
                token: None,
                endpoints: Vec::new(),
            };
            if s.scheme == "channel" {
                let name = format!("surface-{}.md", s.target.replace('/', "-").trim());
                ctx.token = crate::pod::platform_token_var(&s.target);
                ctx.skill = Some(name.clone());
                skills.push(SkillCtx { name, why: format!("{} channel surface", s.target) });
            }
            if s.scheme != "service" {
                return ctx;
            }
            if pod.has_service(&s.target) {
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
                    ctx.skill = Some(skill.name.clone());
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
    // Operator skills in merged order (those held back are not in the tree).
    for j in judged.iter().filter(|j| j.held_back.is_none() && matches!(j.entry.layer, crate::skill::carried::Layer::Pod { .. })) {
        let name = &j.entry.skill.file;
        if !["handle-", "surface-", "include-"].iter().any(|p| name.starts_with(p)) {
            skills.push(SkillCtx { name: name.clone(), why: "operator-provided skill".to_string() });
        }
    }
    let resolution: Vec<String> = judged
        .iter()
        .filter_map(|j| match &j.held_back {
            Some(h) => Some(format!("[skill:{}] held back: {}", j.entry.skill.name, h.reason)),
            None => j.line(),
        })
        .collect();
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
            ToolCtx {
                alias: super::native::shown_name(native, &name),
                canonical: name.to_string(),
                description: &reg.tool(&g.service, g.index).description,
            }
        })
        .collect();
    let memory =
        plan.memory.as_ref().map(|m| MemoryCtx { service: &m.service, recall: m.ops.recall.is_some(), retain: m.ops.retain.is_some() });
    let includes = claw
        .include
        .iter()
        .map(|i| IncludeCtx {
            id: &i.id,
            mode: &i.mode,
            description: &i.description,
            skill: (i.mode == "reference").then(|| i.skill_name()),
            file: &i.file,
        })
        .collect();
    let handles = claw.handles.iter().map(|(p, h)| handle_ctx(p, h)).collect();
    let persona = claw.persona.as_ref().map(|p| p.value.as_str());
    let tools_runner = native.map(|n| n.runner.name());
    let ctx = Ctx {
        pod: &pod.name,
        agent,
        claw_type,
        persona,
        surfaces,
        cllama,
        handles,
        feeds,
        skills,
        resolution,
        tools,
        tools_runner,
        memory,
        includes,
    };
    let tmpl = env().get_template("CLAWDAPUS.md").expect("the bundled template is registered");
    tmpl.render(minijinja::value::Value::from(minijinja::value::Serde(&ctx))).expect("the bundled template renders every context")
}

/// Stands in for the agent id in the one rendering replicas share: Private Use Area
/// characters around a name, so it cannot be taken for any id.
const STAND_IN: &str = "\u{E000}clawc-agent-id\u{E001}";

/// `CLAWDAPUS.md` of each of `ids` (the replicas of one service, which differ only in
/// the agent id): rendered once with a stand-in for the id, which is then replaced by each
/// id. That is used only when it is provably the same as rendering each id: the first id's
/// real rendering holds no `U+E000` (so every one in the shared rendering is a stand-in)
/// and equals the shared one with the stand-in replaced; otherwise each id is rendered.
#[allow(clippy::too_many_arguments)]
pub(crate) fn render_replicas(pod: &Pod, reg: &Registry, a: &Agent<'_>, ids: &[String]) -> Vec<Vec<u8>> {
    let one = |id: &str| render(pod, reg, a, id);
    let Some((first_id, rest)) = ids.split_first() else { return Vec::new() };
    let first = one(first_id);
    if rest.is_empty() {
        return vec![first.into_bytes()];
    }
    let shared = one(STAND_IN);
    if first.contains('\u{E000}') || shared.replace(STAND_IN, first_id) != first {
        return std::iter::once(first.into_bytes()).chain(rest.iter().map(|id| one(id).into_bytes())).collect();
    }
    std::iter::once(first.into_bytes()).chain(rest.iter().map(|id| shared.replace(STAND_IN, id).into_bytes())).collect()
}

fn handle_ctx<'a>(platform: &'a str, h: &'a Handle) -> HandleCtx<'a> {
    let guilds = h
        .guilds
        .iter()
        .map(|g| GuildCtx { id: &g.id, name: &g.name, channels: g.channels.iter().map(|c| (c.id.as_str(), c.name.as_str())).collect() })
        .collect();
    HandleCtx { platform, id: &h.id, username: &h.username, guilds }
}
