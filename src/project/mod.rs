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
pub(crate) mod index;
pub(crate) mod mediated;
pub(crate) mod native;
pub(crate) mod report;
pub(crate) mod reuse;
pub(crate) mod skills;

use crate::artifact::Artifact;
use crate::grant::{Plan, SecretMode};
use crate::pod::{Claw, Pod};
use crate::registry::Registry;
use crate::sourcemap::SourceMap;
use native::NativePlan;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The report index's path in the tree.
pub(crate) const REPORT: &str = "report.json";

/// Below this many agent ids a pod is projected on the calling thread: its rendering
/// takes less than starting a thread costs.
pub(crate) const PARALLEL_MIN_AGENTS: usize = 64;

/// How many agent ids a batch of agent services holds (a service is never split, so a
/// batch may hold more): what a compile that writes as it goes holds at once.
pub(crate) const BATCH_AGENTS: usize = 512;

/// Agent services with their plans, in service order.
pub(crate) type Services<'a> = [(&'a String, &'a Plan)];

/// Renders every per-agent artifact (each agent service's report among them) with tokens
/// redacted (`${VAR}`), a batch of whole agent services at a time, and hands each batch to
/// `take` in service order (each service's files apart). A service `take` says it
/// already holds ([`Take::reused`]) is not rendered. [`inline`] then renders the files
/// where `--secrets inline` asks for literal tokens. ([`index::index`], the report index, is
/// rendered before: it needs no rendered file, only every warning.) The services
/// of a batch are rendered on up to `threads` threads (each service's rendering is
/// independent of the others'); the batches are cut by agent count, so they are the same
/// whatever `threads` is.
#[allow(clippy::too_many_arguments)]
pub(crate) fn project<'a>(
    pod: &'a Pod,
    reg: &'a Registry,
    plans: &'a BTreeMap<String, Plan>,
    natives: &'a BTreeMap<String, NativePlan>,
    skills: &'a BTreeMap<String, Vec<crate::skill::carried::Judged>>,
    sources: &SourceMap,
    threads: usize,
    take: &mut dyn Take<'a>,
) {
    let services: Vec<(&'a String, &'a Plan)> = plans.iter().collect();
    let ids = |s: &str| pod.services[s].claw.as_ref().map_or(0, |c| c.count.max(1) as usize);
    let agent_ids: usize = services.iter().map(|(s, _)| ids(s)).sum();
    let threads = if agent_ids < PARALLEL_MIN_AGENTS { 1 } else { threads };
    // Asked for many services at once, so what the sink looks at is looked at on every
    // core; [`REUSE_AGENTS`] at a time, so what it hands back (every file of the services
    // taken) is bounded.
    for chunk in by_agents(&services, REUSE_AGENTS, &ids) {
        let names: Vec<&'a str> = chunk.iter().map(|(s, _)| s.as_str()).collect();
        let reused = take.reused(&names);
        project_chunk(pod, reg, natives, skills, sources, threads, take, chunk, reused, ids);
    }
}

/// How many agent ids [`project`] asks the sink about at once (a service is never split).
pub(crate) const REUSE_AGENTS: usize = 4096;

/// `services` in runs of about `most` agent ids each (`ids` of a service), in order; a
/// service is never split, so a run may hold more.
fn by_agents<'s, 'n, T>(
    services: &'s [(&'n String, T)],
    most: usize,
    ids: impl Fn(&str) -> usize,
) -> impl Iterator<Item = &'s [(&'n String, T)]> {
    let mut rest = services;
    std::iter::from_fn(move || {
        let mut count = 0;
        let mut held = 0;
        while count < rest.len() && (count == 0 || held + ids(rest[count].0) <= most) {
            held += ids(rest[count].0);
            count += 1;
        }
        let (run, tail) = rest.split_at(count);
        rest = tail;
        (!run.is_empty()).then_some(run)
    })
}

/// Renders, a batch of about [`BATCH_AGENTS`] agent ids at a time, the services of
/// `chunk` not `reused`, handing each batch to `take`.
#[expect(clippy::too_many_arguments, reason = "project's own inputs, passed on")]
fn project_chunk<'a>(
    pod: &'a Pod,
    reg: &'a Registry,
    natives: &'a BTreeMap<String, NativePlan>,
    skills: &'a BTreeMap<String, Vec<crate::skill::carried::Judged>>,
    sources: &SourceMap,
    threads: usize,
    take: &mut dyn Take<'a>,
    chunk: &[(&'a String, &'a Plan)],
    reused: Vec<bool>,
    ids: impl Fn(&str) -> usize,
) {
    let mut reused = reused.into_iter();
    for batch in by_agents(chunk, BATCH_AGENTS, &ids) {
        let mut render = Vec::with_capacity(batch.len());
        for (&(service, plan), reused) in batch.iter().zip(reused.by_ref()) {
            if !reused {
                render.push((service, plan));
            }
        }
        if render.is_empty() {
            continue;
        }
        let rendered = crate::jobs::map_runs(&render, threads, 1, |_, run| {
            run.iter().map(|&(service, plan)| render_service(pod, reg, service, plan, natives, skills, sources)).collect::<Vec<_>>()
        });
        // In service order, so the batch is what one thread would have built.
        take.rendered(&render, rendered.into_iter().flatten().collect());
    }
}

/// What [`project`] hands its batches to.
pub(crate) trait Take<'a> {
    /// For each of `services`, whether its files are already had (then it is not
    /// rendered).
    fn reused(&mut self, services: &[&'a str]) -> Vec<bool>;

    /// A batch of rendered `services`, with each one's files (in the same order).
    fn rendered(&mut self, services: &Services<'a>, files: Vec<Vec<(String, Artifact)>>);
}

/// Every file of every replica of agent `service` (in insertion order), its report among
/// them.
fn render_service<'a>(
    pod: &'a Pod,
    reg: &'a Registry,
    service: &'a str,
    plan: &'a Plan,
    natives: &'a BTreeMap<String, NativePlan>,
    skills: &'a BTreeMap<String, Vec<crate::skill::carried::Judged>>,
    sources: &SourceMap,
) -> Vec<(String, Artifact)> {
    let mut out = Vec::new();
    let Some(claw) = pod.services.get(service).and_then(|s| s.claw.as_ref()) else { return out };
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
    }
    out.push((report::path(service), file(crate::artifact::json::to_go_json(&report).into(), false)));
    out
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
            let secret = plan.tools.iter().any(|t| literal(t.auth.as_deref()));
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

/// The files of `services` that hold literal tokens with `--secrets inline`, rendered
/// again: only the cllama and runner files of agents carry tokens; everything else is
/// what the redacted projection made.
pub(crate) fn inline(
    pod: &Pod,
    reg: &Registry,
    services: &Services<'_>,
    natives: &BTreeMap<String, NativePlan>,
) -> Vec<(String, Artifact)> {
    let mut out = Vec::new();
    let file = |bytes: Arc<[u8]>, secret: bool| Artifact { bytes, secret, executable: false };
    for &(service, plan) in services {
        let claw = pod.services[service].claw.as_ref().expect("plans exist only for x-claw agents");
        if let Some(n) = natives.get(service) {
            for id in claw.agent_ids(service) {
                for (name, bytes, secret) in native::files(&id, service, n, SecretMode::Inline) {
                    out.push((format!("runners/{id}/{name}"), file(bytes.into(), secret)));
                }
            }
        }
        if claw.cllama.is_empty() {
            continue;
        }
        let files = ServiceFiles::render(reg, claw, plan, SecretMode::Inline);
        for id in claw.agent_ids(service) {
            for (name, bytes, secret) in files.for_agent(&id, plan, SecretMode::Inline) {
                out.push((format!("context/{id}/{name}"), file(bytes, secret)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_go_in_runs_of_about_so_many_agent_ids_in_order_none_split() {
        let names: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
        let counts = [3, 1, 1, 9, 2, 2, 2, 1, 0, 4];
        let services: Vec<(&String, usize)> = names.iter().zip(counts).collect();
        let ids = |s: &str| services.iter().find(|(n, _)| *n == s).map_or(0, |(_, c)| *c);
        let runs: Vec<Vec<usize>> = by_agents(&services, 4, ids).map(|run| run.iter().map(|(_, c)| *c).collect()).collect();
        assert_eq!(runs, [vec![3, 1], vec![1], vec![9], vec![2, 2], vec![2, 1, 0], vec![4]]);
        assert_eq!(by_agents(&services[..0], 4, ids).count(), 0);
    }
}
