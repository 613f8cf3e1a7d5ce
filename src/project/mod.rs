//! Projection: resolved plans → the artifact tree. Pure: same inputs, same bytes.
//!
//! ```text
//! context/<agent-id>/CLAWDAPUS.md       every agent
//! context/<agent-id>/tools.json         cllama agents with ≥ 1 granted tool
//! context/<agent-id>/feeds.json         cllama agents with ≥ 1 feed
//! context/<agent-id>/memory.json        cllama agents with memory
//! context/<agent-id>/skills/<name>      its skills, merged: descriptor skills of its service
//!                                       surfaces, then x-claw.skills (a folder copied whole);
//!                                       a skill its tier may not use is held back
//! runners/<agent-id>/…                  native agents with ≥ 1 granted tool (see [`native`])
//! report/<service>.json                every agent service: each of its agents' tools with
//!                                       their grants, feeds, memory, skills (one file per
//!                                       service, the unit grants are made for, so a change
//!                                       to one rewrites only its own)
//! report.json                           the index: pod, agents, services, every warning
//! ```

pub(crate) mod context_md;
pub(crate) mod mediated;
pub(crate) mod native;
pub(crate) mod report;
pub(crate) mod skills;

use crate::artifact::{Artifact, ArtifactSet};
use crate::diag::Diagnostic;
use crate::grant::{Plan, SecretMode};
use crate::pod::{Claw, Pod};
use crate::registry::Registry;
use crate::sourcemap::SourceMap;
use native::NativePlan;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The report index's path in the tree.
pub(crate) const REPORT: &str = "report.json";

/// The per-agent artifacts (each agent service's report among them), and the report index's
/// entries. The index is rendered last ([`Projected::with_report`]), once the leak scan has
/// added its warnings.
pub(crate) struct Projected<'a> {
    pub artifacts: ArtifactSet,
    agents: Vec<report::IndexEntry<'a>>,
}

/// Below this many agent ids a pod is projected on the calling thread: its rendering
/// takes less than starting a thread costs.
pub(crate) const PARALLEL_MIN_AGENTS: usize = 64;

/// Builds every per-agent artifact with tokens redacted (`${VAR}`); [`Projected::inline`]
/// then writes literal tokens where `--secrets inline` asks for them. Agent services are
/// rendered on up to `threads` threads (each service's rendering is independent of the
/// others') and put together in service order, as one thread would.
#[allow(clippy::too_many_arguments)]
pub(crate) fn project<'a>(
    pod: &'a Pod,
    reg: &'a Registry,
    plans: &'a BTreeMap<String, Plan>,
    natives: &'a BTreeMap<String, NativePlan>,
    skills: &'a BTreeMap<String, Vec<crate::skill::carried::Judged>>,
    sources: &SourceMap,
    threads: usize,
) -> Projected<'a> {
    let services: Vec<(&'a String, &'a Plan)> = plans.iter().collect();
    let agent_ids: usize = services.iter().filter_map(|(s, _)| pod.services[*s].claw.as_ref()).map(|c| c.count.max(1) as usize).sum();
    let threads = if agent_ids < PARALLEL_MIN_AGENTS { 1 } else { threads };
    let rendered = crate::jobs::map_runs(&services, threads, 1, |_, run| {
        run.iter().map(|&(service, plan)| render_service(pod, reg, service, plan, natives, skills, sources)).collect::<Vec<_>>()
    });
    let mut out = ArtifactSet::default();
    let mut agents = Vec::new();
    // In service order, so the tree is what one thread would have built, insert by insert.
    for (files, reports) in rendered.into_iter().flatten() {
        out.0.extend(files);
        agents.extend(reports);
    }
    agents.sort_by(|a, b| a.id.cmp(&b.id));
    Projected { artifacts: out, agents }
}

/// What one agent service renders: its files in insertion order, and its agents' entries
/// in the report index.
type ServiceOutput<'a> = (Vec<(String, Artifact)>, Vec<report::IndexEntry<'a>>);

/// Every file of every replica of agent `service`, and what the report says of each.
fn render_service<'a>(
    pod: &'a Pod,
    reg: &'a Registry,
    service: &'a str,
    plan: &'a Plan,
    natives: &'a BTreeMap<String, NativePlan>,
    skills: &'a BTreeMap<String, Vec<crate::skill::carried::Judged>>,
    sources: &SourceMap,
) -> ServiceOutput<'a> {
    let mut out = Vec::new();
    let mut agents = Vec::new();
    let Some(claw) = pod.services.get(service).and_then(|s| s.claw.as_ref()) else { return (out, agents) };
    let mediated = (!claw.cllama.is_empty()).then(|| ServiceFiles::render(reg, claw, plan, SecretMode::Redact));
    let native = natives.get(service);
    let ids = claw.agent_ids(service);
    let runner = reg.runners.get(service).map(|r| r.runner.as_str());
    let judged = skills.get(service).map_or(&[][..], Vec::as_slice);
    let agent = context_md::Agent { claw, plan, claw_type: runner, native, skills: judged };
    let mds = context_md::render_replicas(pod, reg, &agent, &ids);
    let mut report = report::service_report(service, claw, plan, native, reg, sources, judged);
    let skill_files: Vec<(String, Arc<[u8]>, bool)> = crate::project::skills::written(judged).flat_map(|e| e.skill.files()).collect();
    let file = |bytes: Arc<[u8]>, secret: bool| Artifact { bytes, secret, executable: false };
    for (id, md) in ids.into_iter().zip(mds) {
        let dir = format!("context/{id}");
        let mut files = Vec::new();
        let mut put = |out: &mut Vec<(String, Artifact)>, name: &str, bytes: Arc<[u8]>, secret: bool| {
            files.push(format!("{dir}/{name}"));
            out.push((format!("{dir}/{name}"), file(bytes, secret)));
        };
        put(&mut out, "CLAWDAPUS.md", md.into(), false);
        if let Some(files) = &mediated {
            for (name, bytes, secret) in files.for_agent(&id, plan, SecretMode::Redact) {
                put(&mut out, name, bytes, secret);
            }
        }
        for (rel, bytes, executable) in &skill_files {
            files.push(format!("{dir}/skills/{rel}"));
            out.push((format!("{dir}/skills/{rel}"), Artifact { bytes: bytes.clone(), secret: false, executable: *executable }));
        }
        if let Some(n) = native {
            for (name, bytes, secret) in native::files(&id, service, n, SecretMode::Redact) {
                files.push(format!("runners/{id}/{name}"));
                out.push((format!("runners/{id}/{name}"), file(bytes.into(), secret)));
            }
        }
        files.sort();
        report.agents.push(report::replica_report(&id, plan, files));
        agents.push(report::IndexEntry::new(id, service));
    }
    out.push((report::path(service), file(crate::artifact::json::to_go_json(&report).into(), false)));
    (out, agents)
}

/// A rendered file: its bytes (shared between the agents that have the same) and whether
/// it holds a literal token.
type Rendered = (Arc<[u8]>, bool);

/// The cllama files of one service that do not depend on the agent id (tools unless they
/// run natively, memory): rendered once and shared by every replica.
struct ServiceFiles {
    tools: Option<Rendered>,
    memory: Option<Rendered>,
}

impl ServiceFiles {
    fn render(reg: &Registry, claw: &Claw, plan: &Plan, mode: SecretMode) -> Self {
        let inline = mode == SecretMode::Inline;
        let literal = |t: Option<&crate::grant::Token>| inline && t.is_some_and(|a| a.value.is_some());
        let tools = (!plan.tools.is_empty() && claw.execution == crate::pod::Execution::Mediated).then(|| {
            let secret = plan.tools.iter().any(|t| literal(t.auth.as_ref()));
            (mediated::tools_json(reg, &plan.tools, &claw.tool_policy, mode).into(), secret)
        });
        let memory = plan.memory.as_ref().map(|m| (mediated::memory_json(m, mode).into(), literal(m.auth.as_ref())));
        ServiceFiles { tools, memory }
    }

    /// Agent `id`'s cllama files, the only context files that carry tokens: (name, bytes,
    /// whether it holds a literal token). `feeds.json` names the agent, so it is its own.
    fn for_agent(&self, id: &str, plan: &Plan, mode: SecretMode) -> Vec<(&'static str, Arc<[u8]>, bool)> {
        let mut out = Vec::with_capacity(3);
        if let Some((bytes, secret)) = &self.tools {
            out.push(("tools.json", bytes.clone(), *secret));
        }
        if !plan.feeds.is_empty() {
            let secret = mode == SecretMode::Inline && plan.feeds.iter().any(|f| f.auth.as_ref().is_some_and(|a| a.value.is_some()));
            out.push(("feeds.json", mediated::feeds_json(id, &plan.feeds, mode).into(), secret));
        }
        if let Some((bytes, secret)) = &self.memory {
            out.push(("memory.json", bytes.clone(), *secret));
        }
        out
    }
}

impl Projected<'_> {
    /// The tree with literal tokens (`--secrets inline`): only the cllama files of agents
    /// are rendered again; everything else is what the redacted projection made.
    pub(crate) fn inline(
        mut self,
        pod: &Pod,
        reg: &Registry,
        plans: &BTreeMap<String, Plan>,
        natives: &BTreeMap<String, NativePlan>,
    ) -> Self {
        for (service, n) in natives {
            let claw = pod.services[service].claw.as_ref().expect("native plans exist only for x-claw agents");
            for id in claw.agent_ids(service) {
                for (name, bytes, secret) in native::files(&id, service, n, SecretMode::Inline) {
                    self.artifacts.insert_secret(format!("runners/{id}/{name}"), bytes, secret);
                }
            }
        }
        for (service, plan) in plans {
            let claw = pod.services[service].claw.as_ref().expect("plans exist only for x-claw agents");
            if claw.cllama.is_empty() {
                continue;
            }
            let files = ServiceFiles::render(reg, claw, plan, SecretMode::Inline);
            for id in claw.agent_ids(service) {
                for (name, bytes, secret) in files.for_agent(&id, plan, SecretMode::Inline) {
                    self.artifacts.insert_secret(format!("context/{id}/{name}"), bytes, secret);
                }
            }
        }
        self
    }

    /// The whole tree: the per-agent artifacts and the report index, `report.json`, with
    /// `warnings`.
    pub(crate) fn with_report(self, pod: &Pod, reg: &Registry, sources: &SourceMap, warnings: &[Diagnostic]) -> ArtifactSet {
        let report = report::Report {
            version: report::VERSION,
            pod: &pod.name,
            agents: self.agents,
            services: report::services_report(pod, reg, sources),
            warnings: warnings.iter().map(|w| w.to_json(sources)).collect(),
        };
        let mut out = self.artifacts;
        out.insert(REPORT, crate::artifact::json::to_go_json(&report));
        out
    }
}
