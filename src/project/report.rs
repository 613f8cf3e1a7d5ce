//! The compile report: per agent service (`report/<service>.json`), its granted tools with
//! the grant that caused each, memory, skills and a summary, and per replica its feeds and
//! files; in the index (`report.json`), every agent and its report file, per service where
//! its descriptor came from, and every warning. Never holds a secret value (only variable
//! names).
//!
//! One file per agent service, the unit grants are made for: its replicas share every
//! grant, so what they share is said once, and a change to one service's grants rewrites
//! its file and nothing else (a single report of 3,000 agents was 32 MB, rewritten whole on
//! every change).

use crate::diag::DiagnosticJson;
use crate::grant::{Plan, Provenance};
use crate::pod::Origin;
use crate::project::native::NativePlan;
use crate::registry::Registry;
use crate::sourcemap::SourceMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// The report format's version (2: one file per agent service, `report.json` their index).
pub(crate) const VERSION: u32 = 2;

/// `report.json`, the index (`schemas/report.schema.json`).
#[derive(Serialize)]
pub(crate) struct Report<'a> {
    pub version: u32,
    pub pod: &'a str,
    pub agents: Agents<'a>,
    pub services: Vec<ServiceReport<'a>>,
    pub warnings: Vec<DiagnosticJson>,
}

/// The index's agents, by id: each is its service and replica, and is spelt out (id,
/// service, report file) only as it is written, so the index of 30,000 agent ids holds no
/// string of its own for them (it held two each, about 3 MB); nor a list of them (1.2 MB
/// more): they are merged in id order from each service's, as they are written.
pub(crate) struct Agents<'a> {
    /// The agent services and their `count`, in service order.
    services: Vec<(&'a str, u32)>,
    len: usize,
}

/// An agent in the index: which service it is a replica of (the replica's number when
/// the service has more than one, as in [`crate::pod::Claw::agent_ids`]).
#[derive(Clone, Copy)]
struct Agent<'a> {
    service: &'a str,
    replica: Option<u32>,
}

impl<'a> Agents<'a> {
    /// Every agent id of `services` (agent services with their `count`, in service
    /// order), to be listed sorted by id (the services' order where two ids are alike).
    pub(crate) fn of(services: impl IntoIterator<Item = (&'a str, u32)>) -> Self {
        let services: Vec<(&str, u32)> = services.into_iter().collect();
        let len = services.iter().map(|&(_, count)| count.max(1) as usize).sum();
        Agents { services, len }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The agents sorted by id: each service's replicas come in id order already
    /// ([`Replicas`]), so the services' are merged, a service's next agent at a time.
    fn sorted(&self) -> impl Iterator<Item = Agent<'a>> + '_ {
        let mut heads = std::collections::BinaryHeap::with_capacity(self.services.len());
        for (order, &(service, count)) in self.services.iter().enumerate() {
            let mut replicas = Replicas::of(count);
            if let Some(replica) = replicas.next() {
                heads.push(std::cmp::Reverse(Head { agent: Agent { service, replica }, order, replicas }));
            }
        }
        std::iter::from_fn(move || {
            let mut head = heads.peek_mut()?;
            let agent = head.0.agent;
            match head.0.replicas.next() {
                Some(replica) => head.0.agent.replica = replica,
                None => drop(std::collections::binary_heap::PeekMut::pop(head)),
            }
            Some(agent)
        })
    }
}

/// A service's next agent in a merge of the services' agents by id; alike ids by the
/// service's order.
struct Head<'a> {
    agent: Agent<'a>,
    order: usize,
    replicas: Replicas,
}

impl Ord for Head<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        Agent::id_cmp(&self.agent, &other.agent).then(self.order.cmp(&other.order))
    }
}

impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Head<'_> {}

/// A service's replicas in the order of their ids: by their numbers as text (`0`, `1`,
/// `10`, `11`, `2`, …), each number's successor found from the number alone. A service
/// of `count` 0 or 1 has one agent, with no number.
enum Replicas {
    One,
    Numbered { next: Option<u32>, count: u32 },
    Done,
}

impl Replicas {
    fn of(count: u32) -> Self {
        match count {
            0 | 1 => Replicas::One,
            count => Replicas::Numbered { next: Some(0), count },
        }
    }

    /// What follows `n` among `0..count` in text order: its first child (`n0`) if there
    /// is one, else the next sibling of it or of its nearest ancestor with one.
    fn after(n: u32, count: u32) -> Option<u32> {
        if n == 0 {
            return (count > 1).then_some(1);
        }
        if u64::from(n) * 10 < u64::from(count) {
            return Some(n * 10);
        }
        let mut n = n;
        while n % 10 == 9 || n + 1 >= count {
            n /= 10;
            if n == 0 {
                return None;
            }
        }
        Some(n + 1)
    }
}

impl Iterator for Replicas {
    /// The replica's number, `None` for a service's one agent.
    type Item = Option<u32>;

    fn next(&mut self) -> Option<Option<u32>> {
        match std::mem::replace(self, Replicas::Done) {
            Replicas::One => Some(None),
            Replicas::Numbered { next: Some(n), count } => {
                *self = Replicas::Numbered { next: Replicas::after(n, count), count };
                Some(Some(n))
            }
            Replicas::Numbered { next: None, .. } | Replicas::Done => None,
        }
    }
}

impl Agent<'_> {
    /// Compares two agents' ids as strings, without spelling them out (a sort makes a
    /// dozen comparisons per agent): most differ within their services' names.
    fn id_cmp(a: &Self, b: &Self) -> std::cmp::Ordering {
        let (x, y) = (a.service.as_bytes(), b.service.as_bytes());
        let n = x.len().min(y.len());
        x[..n].cmp(&y[..n]).then_with(|| {
            let (mut p, mut q) = ([0; 11], [0; 11]);
            let (x, y) = ([&x[n..], a.suffix(&mut p)], [&y[n..], b.suffix(&mut q)]);
            x.iter().flat_map(|s| s.iter()).cmp(y.iter().flat_map(|s| s.iter()))
        })
    }

    /// What follows the service's name in the agent's id: `-` and the replica's number, or
    /// nothing.
    fn suffix<'b>(&self, buf: &'b mut [u8; 11]) -> &'b [u8] {
        let Some(mut r) = self.replica else { return &[] };
        let mut at = buf.len();
        loop {
            at -= 1;
            buf[at] = b'0' + (r % 10) as u8;
            r /= 10;
            if r == 0 {
                break;
            }
        }
        at -= 1;
        buf[at] = b'-';
        &buf[at..]
    }
}

impl Serialize for Agents<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.sorted())
    }
}

impl Serialize for Agent<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut entry = s.serialize_struct("Agent", 3)?;
        entry.serialize_field("id", &format_args!("{self}"))?;
        entry.serialize_field("service", self.service)?;
        entry.serialize_field("report", &format_args!("{}", ReportPath(self.service)))?;
        entry.end()
    }
}

/// The agent's id.
impl std::fmt::Display for Agent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut buf = [0; 11];
        let suffix = std::str::from_utf8(self.suffix(&mut buf)).map_err(|_| std::fmt::Error)?;
        write!(f, "{}{suffix}", self.service)
    }
}

/// Where agent service `service`'s report is written.
pub(crate) fn path(service: &str) -> String {
    ReportPath(service).to_string()
}

/// Agent service `.0`'s report's path, as it is written.
struct ReportPath<'a>(&'a str);

impl std::fmt::Display for ReportPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "report/{}.json", self.0)
    }
}

/// `report/<service>.json` (`schemas/service-report.schema.json`): what an agent service's
/// replicas share, then each replica's own.
#[derive(Serialize)]
pub(crate) struct AgentServiceReport<'a> {
    pub service: &'a str,
    pub cllama: &'a [String],
    /// `native` or `mediated` (how its tools run).
    pub tool_execution: &'static str,
    /// The runner that loads its tools natively.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<&'static str>,
    pub tools: Vec<ToolReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryReport<'a>>,
    /// Per service it has grants on, in grant order.
    pub summary: Vec<ServiceSummary>,
    /// Its skills in merged order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<SkillReport>,
    /// Its agents, in replica order.
    pub agents: Vec<ReplicaReport<'a>>,
}

/// One agent (replica) of an agent service: what differs between replicas.
#[derive(Serialize)]
pub(crate) struct ReplicaReport<'a> {
    pub id: String,
    pub feeds: Vec<FeedReport<'a>>,
    pub artifacts: Vec<String>,
}

/// One skill of an agent: where it came from, what clawc found in it, and how its tools
/// resolved for this agent.
#[derive(Serialize)]
pub(crate) struct SkillReport {
    pub name: String,
    /// Where it is written in the agent's context (absent when held back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub source: String,
    /// `descriptor` (a service surface's) or `pod` (`x-claw.skills`).
    pub from: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    pub kind: crate::skill::carried::Kind,
    /// The skills of the same name it replaced, earliest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<Replaced>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<crate::skill::carried::Brought>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub invalid_tools: Vec<InvalidToolReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shadowed_tools: Vec<ShadowedReport>,
    pub sections: SectionsReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_requirement: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_back: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<ResolutionReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scope_rules: Vec<String>,
}

#[derive(Serialize)]
pub(crate) struct Replaced {
    pub from: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    pub source: String,
}

#[derive(Serialize)]
pub(crate) struct InvalidToolReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub index: usize,
    pub reasons: Vec<ReasonReport>,
}

#[derive(Serialize)]
pub(crate) struct ReasonReport {
    pub rule: &'static str,
    pub message: String,
    pub line: u32,
    pub column: u32,
}

#[derive(Serialize)]
pub(crate) struct ShadowedReport {
    pub name: String,
    pub by: String,
}

#[derive(Serialize)]
pub(crate) struct SectionsReport {
    /// Whether every required section was checked (a SPEC-0023 skill, or `--strict`).
    pub spec: bool,
    pub found: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<&'static str>,
}

#[derive(Serialize)]
pub(crate) struct ResolutionReport {
    #[serde(flatten)]
    pub outcome: crate::skill::resolve::Resolution,
    /// SPEC-0023's log line.
    pub line: String,
}

/// The report's `skills` of an agent service.
fn skills_report(judged: &[crate::skill::carried::Judged]) -> Vec<SkillReport> {
    use crate::skill::carried::Layer;
    let layer = |l: &Layer| match l {
        Layer::Descriptor { service } => ("descriptor", Some(service.clone())),
        Layer::Pod { .. } => ("pod", None),
    };
    judged
        .iter()
        .map(|j| {
            let skill = &j.entry.skill;
            let (from, service) = layer(&j.entry.layer);
            let md = &skill.markdown;
            let invalid = match &skill.body {
                crate::skill::carried::Body::Folder(f) => f
                    .invalid
                    .iter()
                    .map(|t| InvalidToolReport {
                        name: t.name.clone(),
                        index: t.index,
                        reasons: t
                            .reasons
                            .iter()
                            .map(|r| ReasonReport { rule: r.rule, message: r.message.clone(), line: r.line, column: r.column })
                            .collect(),
                    })
                    .collect(),
                crate::skill::carried::Body::File(_) => Vec::new(),
            };
            SkillReport {
                name: skill.name.clone(),
                path: j.held_back.is_none().then(|| format!("skills/{}", skill.file)),
                source: skill.source.clone(),
                from,
                service,
                kind: skill.kind(),
                replaces: j
                    .entry
                    .replaced
                    .iter()
                    .map(|(l, source)| {
                        let (from, service) = layer(l);
                        Replaced { from, service, source: source.clone() }
                    })
                    .collect(),
                tools: skill.tools().to_vec(),
                invalid_tools: invalid,
                shadowed_tools: j.shadowed.iter().map(|(name, by)| ShadowedReport { name: name.clone(), by: by.clone() }).collect(),
                sections: SectionsReport {
                    spec: md.is_spec(),
                    found: md.found.iter().map(|(s, _)| s.label()).collect(),
                    missing: if md.is_spec() {
                        md.missing().into_iter().map(crate::skill::markdown::Section::label).collect()
                    } else {
                        Vec::new()
                    },
                },
                tier_requirement: match &md.tier {
                    Some(crate::skill::markdown::Tier::Min(n)) => Some(*n),
                    _ => None,
                },
                held_back: j.held_back.as_ref().map(|h| h.reason.clone()),
                resolution: j.resolution.clone().map(|r| ResolutionReport { line: r.line(&skill.name), outcome: r }),
                scope_rules: md.scope_rules.clone(),
            }
        })
        .collect()
}

#[derive(Serialize)]
pub(crate) struct ServiceSummary {
    pub service: String,
    pub granted: usize,
    pub not_granted: usize,
    /// Of the granted tools, by their annotations (`readOnlyHint` / `readOnly`).
    pub read_only: usize,
    pub side_effecting: usize,
    pub unannotated: usize,
    /// The tools an `allow: all` grant (or a bare service name) gave.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub all_expanded_to: Vec<String>,
}

/// Grant summary per service, in the order the services were first granted.
pub(crate) fn summary(plan: &Plan, reg: &Registry) -> Vec<ServiceSummary> {
    let mut out: Vec<ServiceSummary> = Vec::new();
    for g in &plan.tools {
        let tool = reg.tool(&g.service, g.index);
        let pos = match out.iter().position(|s| *s.service == *g.service) {
            Some(p) => p,
            None => {
                let total = reg.services[&*g.service].descriptor.tools.len();
                out.push(ServiceSummary {
                    service: g.service.to_string(),
                    granted: 0,
                    not_granted: total,
                    read_only: 0,
                    side_effecting: 0,
                    unannotated: 0,
                    all_expanded_to: Vec::new(),
                });
                out.len() - 1
            }
        };
        let s = &mut out[pos];
        s.granted += 1;
        s.not_granted -= 1;
        match tool.read_only() {
            Some(true) => s.read_only += 1,
            Some(false) => s.side_effecting += 1,
            None => s.unannotated += 1,
        }
        if g.via.all {
            s.all_expanded_to.push(tool.name.clone());
        }
    }
    out
}

#[derive(Serialize)]
pub(crate) struct ToolReport {
    pub name: String,
    /// The name the model sees: cllama's alias, or the native runner's name.
    pub alias: String,
    pub grant: GrantReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_env: Option<String>,
}

#[derive(Serialize)]
pub(crate) struct GrantReport {
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// `service` (the agent's own `tools:`), `tools-defaults` (inherited because the
    /// service declares no `tools:`) or `spread` (spliced in by `...`).
    pub via: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread_line: Option<u32>,
    /// `all` or `named`.
    pub allow: &'static str,
}

#[derive(Serialize)]
pub(crate) struct FeedReport<'a> {
    pub name: String,
    pub source: &'a str,
    pub url: String,
    pub ttl: u64,
}

#[derive(Serialize)]
pub(crate) struct MemoryReport<'a> {
    pub service: &'a str,
    pub base_url: &'a str,
    pub timeout_ms: u64,
}

#[derive(Serialize)]
pub(crate) struct ServiceReport<'a> {
    pub name: &'a str,
    /// Why `claw up` injects this service (it is not in the pod file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub injected: Option<&'a str>,
    pub descriptor: DescriptorReport<'a>,
}

#[derive(Serialize)]
pub(crate) struct DescriptorReport<'a> {
    pub source: &'a str,
    pub origin: &'a crate::source::OriginKind,
    pub version: u8,
    pub tools: Vec<&'a str>,
    pub feeds: Vec<&'a str>,
    pub memory: bool,
}

pub(crate) fn grant_report(via: &Provenance, sources: &SourceMap) -> GrantReport {
    let (via_s, spread_line) = match via.origin {
        Origin::Service => ("service", None),
        Origin::Defaults { spread: None } => ("tools-defaults", None),
        Origin::Defaults { spread: Some(l) } => ("spread", Some(l.span.line)),
        Origin::Wall => ("conversation-wall", None),
    };
    GrantReport {
        file: sources.name(via.grant.file).to_string(),
        line: via.grant.span.line,
        column: via.grant.span.col,
        via: via_s,
        spread_line,
        allow: if via.all { "all" } else { "named" },
    }
}

/// The report's tools of one agent service.
fn tools_report(plan: &Plan, native: Option<&NativePlan>, reg: &Registry, sources: &SourceMap) -> Vec<ToolReport> {
    plan.tools
        .iter()
        .map(|g| {
            let name = reg.tool_name(&g.service, g.index);
            ToolReport {
                alias: crate::project::native::shown_name(native, &name),
                name: name.to_string(),
                grant: grant_report(&g.via, sources),
                auth_env: g.auth.as_ref().map(|t| t.env.clone()),
            }
        })
        .collect()
}

/// Agent service `service`'s report, without its agents ([`replica_report`] adds them).
pub(crate) fn service_report<'a>(
    service: &'a str,
    claw: &'a crate::pod::Claw,
    plan: &'a Plan,
    native: Option<&NativePlan>,
    reg: &Registry,
    sources: &SourceMap,
    skills: &[crate::skill::carried::Judged],
) -> AgentServiceReport<'a> {
    let memory = plan.memory.as_ref().map(|m| MemoryReport { service: &m.service, base_url: &m.base_url, timeout_ms: m.timeout_ms });
    AgentServiceReport {
        service,
        cllama: &claw.cllama,
        tool_execution: claw.execution.name(),
        runner: native.map(|n| n.runner.name()),
        tools: tools_report(plan, native, reg, sources),
        memory,
        summary: summary(plan, reg),
        skills: skills_report(skills),
        agents: Vec::new(),
    }
}

/// Agent `id`'s own part: its feeds (their names and paths hold the id) and its files.
pub(crate) fn replica_report<'a>(id: &str, plan: &'a Plan, artifacts: Vec<String>) -> ReplicaReport<'a> {
    let feeds = plan
        .feeds
        .iter()
        .map(|f| {
            let (_, url) = f.path_and_url_for(id);
            FeedReport { name: f.name_for(id), source: &f.source, url, ttl: f.ttl }
        })
        .collect();
    ReplicaReport { id: id.to_string(), feeds, artifacts }
}

pub(crate) fn services_report<'a>(pod: &'a crate::pod::Pod, reg: &'a Registry, sources: &'a SourceMap) -> Vec<ServiceReport<'a>> {
    let by_name: BTreeMap<&str, _> = reg.services.iter().map(|(k, v)| (k.as_str(), v)).collect();
    by_name
        .into_iter()
        .map(|(name, d)| ServiceReport {
            name,
            injected: pod.builtins.get(name).map(|b| b.why.as_str()),
            descriptor: DescriptorReport {
                source: sources.name(d.file),
                origin: &d.origin,
                version: d.descriptor.version,
                tools: d.descriptor.tools.iter().map(|t| t.name.as_str()).collect(),
                feeds: d.descriptor.feeds.iter().map(|f| f.name.as_str()).collect(),
                memory: d.descriptor.memory.is_some(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_lists_agents_by_id_as_strings_sort_and_spells_each_out() {
        // Replicas past 9 sort as text ("a-10" before "a-2"), a service's name may be
        // another's id or a prefix of it, and alike ids keep their services' order.
        let agents = Agents::of([("a", 12), ("a-1", 1), ("ab", 2), ("a-", 0), ("b", 1)]);
        let json = serde_json::to_value(&agents).unwrap();
        let got: Vec<(&str, &str, &str)> = json
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["id"].as_str().unwrap(), e["service"].as_str().unwrap(), e["report"].as_str().unwrap()))
            .collect();
        let mut want = vec![("a-", "a-"), ("a-0", "a"), ("a-1", "a"), ("a-1", "a-1"), ("a-10", "a"), ("a-11", "a")];
        want.extend(["a-2", "a-3", "a-4", "a-5", "a-6", "a-7", "a-8", "a-9"].map(|id| (id, "a")));
        want.extend([("ab-0", "ab"), ("ab-1", "ab"), ("b", "b")]);
        let want: Vec<(&str, &str, String)> = want.into_iter().map(|(id, s)| (id, s, format!("report/{s}.json"))).collect();
        assert_eq!(got.len(), want.len());
        let mut buf = [0; 11];
        for (replica, suffix) in [(None, ""), (Some(0), "-0"), (Some(907), "-907"), (Some(u32::MAX), "-4294967295")] {
            assert_eq!(Agent { service: "s", replica }.suffix(&mut buf), suffix.as_bytes());
        }
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((g.0, g.1, g.2), (w.0, w.1, w.2.as_str()));
        }
    }

    /// A service's replicas come in the order of their ids as text, for every count.
    #[test]
    fn replicas_come_in_text_order() {
        for count in (0..=1_200).chain([9_999, 10_000, 10_001, 100_000]) {
            let got: Vec<Option<u32>> = Replicas::of(count).collect();
            let mut want: Vec<Option<u32>> = if count < 2 { vec![None] } else { (0..count).map(Some).collect() };
            want.sort_by_key(|r| r.map(|n| n.to_string()));
            assert_eq!(got, want, "count {count}");
        }
    }

    /// The merge of the services' agents is their ids' stable sort, over services whose
    /// names are each other's ids and prefixes, with every mix of counts.
    #[test]
    fn the_merged_agents_are_the_ids_stably_sorted() {
        let names = ["a", "a-", "a-1", "a-1-", "a-10", "a-2", "ab", "b"];
        let counts = [0, 1, 2, 3, 10, 11, 12, 101];
        for shift in 0..counts.len() {
            let services: Vec<(&str, u32)> = names.iter().enumerate().map(|(i, n)| (*n, counts[(i + shift) % counts.len()])).collect();
            let agents = Agents::of(services.iter().copied());
            let got: Vec<(String, &str)> = agents.sorted().map(|a| (a.to_string(), a.service)).collect();
            let mut want: Vec<(String, &str)> = services
                .iter()
                .flat_map(|&(s, c)| match c {
                    0 | 1 => vec![(s.to_string(), s)],
                    c => (0..c).map(|i| (format!("{s}-{i}"), s)).collect(),
                })
                .collect();
            want.sort_by(|x, y| x.0.cmp(&y.0));
            assert_eq!(agents.len(), want.len());
            assert_eq!(got, want, "counts shifted by {shift}");
        }
    }
}
