//! Grant-aware mode (`--pod`): which agents each finding reaches, the grants NEW would
//! leave dangling, and the new tools `allow: all` would hand out.
//!
//! Each pod is parsed and expanded as `compile` does (defaults, `...` spread, `count`);
//! its grants on the service under test are resolved by the grant pass itself against a
//! registry holding only that service, once with OLD and once with NEW, so `allow: all`,
//! bare names, unions, inherited `tools-defaults` and `tools: []` mean exactly what they
//! mean to `compile`. Agents are named as `who-can` names them ([`access::agents`], the
//! grants' provenance). Problems the pod has elsewhere (another service's descriptor,
//! a token) are not this command's business and are ignored; a grant on the service that
//! NEW breaks is a finding, never an exit 2.

use super::load::Loaded;
use super::{Finding, Subject, codes, rules};
use crate::access;
use crate::compile::{Analysis, Options, pod_dir};
use crate::diag::{Diagnostic, Diagnostics};
use crate::grant::{self, SecretMode};
use crate::pod::{Allow, Pod, Role};
use crate::registry::Registry;
use crate::sourcemap::SourceMap;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One pod, read.
pub(crate) struct PodView {
    /// The pod as given on the command line.
    pub name: String,
    pub pod: Pod,
    pub env: crate::pod::env::Env,
    pub sources: SourceMap,
    /// The service under test.
    pub service: String,
}

/// Reads the pod of `opts` (parse and expand only: no descriptor or image is read) and
/// finds the service under test. Errors are the pod's diagnostics.
pub(crate) fn read(opts: &Options, explicit: Option<&str>, sides: [&Loaded; 2]) -> Result<PodView, (Diagnostics, SourceMap)> {
    let mut sources = SourceMap::default();
    let mut diags = Diagnostics::default();
    let Some((pod, env, _log)) = crate::compile::read_pod(opts, &mut sources, &mut diags) else {
        return Err((diags.sorted(&sources), sources));
    };
    let name = opts.pod.display().to_string();
    match service_under_test(&pod, opts, explicit, sides) {
        Ok(service) => Ok(PodView { name, pod, env, sources, service }),
        Err(d) => {
            diags.push(d.in_file(pod.file));
            Err((diags.sorted(&sources), sources))
        }
    }
}

/// The service whose descriptor source is OLD or NEW (its `describe-file`, its
/// `--descriptor`, or its build context), or `--service`.
fn service_under_test(pod: &Pod, opts: &Options, explicit: Option<&str>, sides: [&Loaded; 2]) -> Result<String, Diagnostic> {
    let pod_name = crate::diag::printable(&opts.pod.display().to_string());
    if let Some(s) = explicit {
        if pod.services.contains_key(s) {
            return Ok(s.to_string());
        }
        let help = crate::diag::suggest(s, pod.services.keys().map(String::as_str), "name a service of this pod");
        return Err(Diagnostic::error(
            codes::SERVICE,
            format!("--service \"{}\" is not a service of {pod_name}", crate::diag::printable(s)),
        )
        .help(help));
    }
    let dir = pod_dir(&opts.pod);
    let wanted: Vec<&PathBuf> = sides.iter().filter_map(|s| s.on_disk.as_ref()).collect();
    let is_side = |p: &Path| p.canonicalize().is_ok_and(|c| wanted.contains(&&c));
    let mut found = BTreeSet::new();
    for (name, svc) in &pod.services {
        let describe_file = svc.claw.as_ref().and_then(|c| c.describe_file.as_ref()).map(|f| dir.join(&f.value));
        let descriptor = opts.descriptors.get(name).cloned();
        let context = svc.build.as_ref().map(|b| dir.join(&b.context));
        if describe_file.into_iter().chain(descriptor).chain(context).any(|p| is_side(&p)) {
            found.insert(name.clone());
        }
    }
    let help = "name it with --service NAME (needed when the pod refers to the service by image)";
    match found.len() {
        1 => Ok(found.into_iter().next().unwrap_or_default()),
        0 => Err(Diagnostic::error(
            codes::SERVICE,
            format!("{pod_name}: no service has OLD or NEW as its describe-file, --descriptor or build context"),
        )
        .help(help)),
        _ => {
            let list: Vec<String> = found.into_iter().collect();
            Err(Diagnostic::error(codes::SERVICE, format!("{pod_name}: several services are described by OLD or NEW: {}", list.join(", ")))
                .help(help))
        }
    }
}

/// Who holds what of the service under one release (agents as indexes into `agents`).
#[derive(Default)]
pub(crate) struct Holdings {
    /// Agent ids, sorted (as `access::agents` lists them).
    agents: Vec<String>,
    /// Tool name → its index in `tools`.
    index: std::collections::HashMap<String, usize>,
    /// Per tool: (agent, granted through `allow: all`).
    tools: Vec<Vec<(u32, bool)>>,
    /// Agents with any tool of the service.
    any_tool: BTreeSet<u32>,
    /// (agent, feed name, feed path) of feeds from the service.
    feeds: Vec<(u32, String, String)>,
    /// Agents whose memory service is the service.
    memory: BTreeSet<u32>,
}

impl Holdings {
    fn of(&self, tool: &str) -> &[(u32, bool)] {
        self.index.get(tool).map_or(&[], |&i| &self.tools[i])
    }

    fn id(&self, agent: u32) -> &str {
        &self.agents[agent as usize]
    }
}

/// What the grant pass reads of a side: its descriptor without the schemas (grants
/// resolve by name; cloning 500 schemas per pod would be most of the work).
pub(crate) fn grant_view(side: &Loaded) -> crate::describe::Described {
    let d = &side.described;
    let descriptor = d.descriptor.as_ref().map(|sd| {
        let desc = &sd.descriptor;
        let tools = desc
            .tools
            .iter()
            .map(|t| crate::describe::Tool {
                name: t.name.clone(),
                description: String::new(),
                input_schema: crate::describe::FreeForm::default(),
                annotations: None,
                transport: t.transport.clone(),
                title: None,
                output_schema: None,
            })
            .collect();
        crate::describe::ServiceDescriptor {
            descriptor: std::sync::Arc::from(crate::describe::Descriptor {
                version: desc.version,
                description: String::new(),
                feeds: desc.feeds.clone(),
                endpoints: Vec::new(),
                auth: desc.auth.clone(),
                skill: None,
                tools,
                mcp: desc.mcp.clone(),
                memory: desc.memory.clone(),
                release: None,
            }),
            file: sd.file,
            origin: sd.origin,
            image: None,
            snapshot: None,
            skill: None,
        }
    });
    crate::describe::Described { name: d.name.clone(), runner: None, descriptor }
}

fn holdings(view: &PodView, side: &Loaded, described: &crate::describe::Described) -> Holdings {
    let mut described = described.clone();
    described.name.clone_from(&view.service);
    let (registry, _) = Registry::build(BTreeMap::from([(view.service.clone(), described)]), &side.sources);
    let (plans, _) = grant::resolve(&view.pod, &registry, &view.env, SecretMode::Redact);
    let a = Analysis { pod: view.pod.clone(), registry, plans, native: BTreeMap::new(), skills: BTreeMap::new() };
    let svc = view.service.as_str();
    let names: Vec<String> =
        a.registry.services.get(svc).map(|d| d.descriptor.tools.iter().map(|t| t.name.clone()).collect()).unwrap_or_default();
    let mut h = Holdings { tools: vec![Vec::new(); names.len()], ..Holdings::default() };
    // As `access::who_can` walks them: every agent id, its service's plan, each grant's
    // provenance — once for all tools.
    for (n, (id, consumer)) in access::agents(&a).into_iter().enumerate() {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        h.agents.push(id);
        let Some(plan) = a.plans.get(consumer) else { continue };
        let mut any = false;
        for g in plan.tools.iter().filter(|g| *g.service == *svc) {
            if let Some(holders) = h.tools.get_mut(g.index) {
                holders.push((n, g.via.all));
                any = true;
            }
        }
        if any {
            h.any_tool.insert(n);
        }
        for f in plan.feeds.iter().filter(|f| f.source == svc) {
            h.feeds.push((n, f.name.clone(), f.path.clone()));
        }
        if plan.memory.as_ref().is_some_and(|m| m.service == svc) {
            h.memory.insert(n);
        }
    }
    h.index = names.into_iter().enumerate().map(|(i, n)| (n, i)).collect();
    h
}

/// A grant by name on a tool NEW lacks: the tool, where, and the agents it is for.
struct Dangling {
    tool: String,
    at: String,
    line: u32,
    agents: Vec<String>,
}

fn dangling(view: &PodView, new: &Loaded) -> Vec<Dangling> {
    let mut out = Vec::new();
    for (name, svc) in &view.pod.services {
        let Some(claw) = svc.claw.as_ref().filter(|c| c.role == Role::Agent) else { continue };
        for g in claw.tools.iter().filter(|g| g.service.value == view.service) {
            let Allow::Named(names) = &g.allow else { continue };
            for n in names.iter().filter(|n| !new.release.tools.contains_key(&n.value)) {
                let file = view.sources.name(n.loc.file);
                out.push(Dangling {
                    tool: n.value.clone(),
                    at: format!("{file}:{}", n.loc.span.line),
                    line: n.loc.span.line,
                    agents: claw.agent_ids(name),
                });
            }
        }
    }
    out
}

/// Where a dangling tool is granted: `file:line`s, the first (file, line), the agents.
type Sites = (Vec<String>, Option<(String, u32)>, BTreeSet<String>);

/// Names the agents of every finding and adds the pod findings (`TOOL_GRANT_DANGLING`,
/// `PRIVILEGE_ALL_GRANT_*`). With several pods, agent ids are qualified `POD:AGENT`.
/// What each pod's agents hold of the service, with OLD and with NEW, pod by pod: the
/// grant pass run twice per pod. Needs no finding, so it runs beside the comparison.
pub(crate) fn hold(views: &[PodView], old: &Loaded, new: &Loaded) -> Vec<(Holdings, Holdings)> {
    let (old_view, new_view) = (grant_view(old), grant_view(new));
    views.iter().map(|view| (holdings(view, old, &old_view), holdings(view, new, &new_view))).collect()
}

/// Names, in each finding, the agents it reaches (`held`: [`hold`] of `views`), and adds
/// the findings only the pods show: new tools `allow: all` hands out, grants NEW leaves
/// dangling.
pub(crate) fn attribute(findings: &mut Vec<Finding>, views: &[PodView], held: &[(Holdings, Holdings)], new: &Loaded) {
    let qualify = views.len() > 1;
    let mut gains: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut dangles: BTreeMap<String, Sites> = BTreeMap::new();
    for (view, (ho, hn)) in views.iter().zip(held) {
        let q = |id: &str| if qualify { format!("{}:{id}", view.name) } else { id.to_string() };
        let tool_agents = |h: &Holdings, t: &str| -> Vec<String> { h.of(t).iter().map(|(n, _)| q(h.id(*n))).collect() };
        for f in findings.iter_mut() {
            let agents: Vec<String> = match &f.subject {
                Subject::Service => Vec::new(),
                Subject::Tool(t) => tool_agents(ho, t),
                Subject::NewTool(t) => tool_agents(hn, t),
                Subject::AllTools => ho.any_tool.iter().map(|n| q(ho.id(*n))).collect(),
                Subject::Feed { name, path } => {
                    ho.feeds.iter().filter(|(_, n, p)| n == name || p == path).map(|(a, _, _)| q(ho.id(*a))).collect()
                }
                Subject::Memory => ho.memory.iter().map(|n| q(ho.id(*n))).collect(),
                Subject::Auth => {
                    let mut all: BTreeSet<u32> = ho.any_tool.iter().chain(&ho.memory).copied().collect();
                    all.extend(ho.feeds.iter().map(|(n, _, _)| *n));
                    all.iter().map(|n| q(ho.id(*n))).collect()
                }
            };
            f.agents.extend(agents);
        }
        for f in findings.iter().filter(|f| f.rule == rules::TOOL_ADDED) {
            let Some(t) = f.tool.as_deref() else { continue };
            let all: Vec<String> = hn.of(t).iter().filter(|(_, all)| *all).map(|(n, _)| q(hn.id(*n))).collect();
            if !all.is_empty() {
                gains.entry(t.to_string()).or_default().extend(all);
            }
        }
        for d in dangling(view, new) {
            let e = dangles.entry(d.tool).or_default();
            e.0.push(d.at.clone());
            if e.1.is_none() {
                e.1 = Some((d.at.rsplit_once(':').map_or(d.at.clone(), |(f, _)| f.to_string()), d.line));
            }
            e.2.extend(d.agents.iter().map(|id| q(id)));
        }
    }
    let service = &new.release.service;
    // A new tool's line is its TOOL_ADDED finding's (no second scan of NEW's text).
    let added_at: BTreeMap<String, u32> =
        findings.iter().filter(|f| f.rule == rules::TOOL_ADDED).filter_map(|f| Some((f.tool.clone()?, f.line))).collect();
    let mut more = Vec::new();
    for (tool, agents) in gains {
        let Some(t) = new.release.tools.get(&tool) else { continue };
        let (rule, what) = if t.read_only() {
            (rules::PRIVILEGE_ALL_GRANT_GAINS_TOOL, "read-only")
        } else {
            (rules::PRIVILEGE_ALL_GRANT_GAINS_WRITE_TOOL, "not read-only")
        };
        let msg =
            format!("new tool `{tool}` ({what}) reaches {} agent(s) through `allow: all` without an operator naming it", agents.len());
        let line = added_at.get(&tool).copied().unwrap_or(1);
        let mut f =
            Finding::new(rule, service, Some(tool.clone()), String::new(), msg, None, Subject::NewTool(tool), &new.release.file, line);
        f.agents = agents.into_iter().collect();
        more.push(f);
    }
    for (tool, (sites, first, agents)) in dangles {
        let (file, line) = first.unwrap_or_default();
        let msg = format!("{} grant(s) `{tool}` by name, which NEW lacks: that pod no longer compiles", sites.join(", "));
        let mut f = Finding::new(
            rules::TOOL_GRANT_DANGLING,
            service,
            Some(tool.clone()),
            String::new(),
            msg,
            None,
            Subject::Tool(tool),
            &file,
            line,
        );
        f.agents = agents.into_iter().collect();
        more.push(f);
    }
    findings.extend(more);
    for f in findings.iter_mut() {
        f.agents.sort();
        f.agents.dedup();
    }
}
