//! Skills in a pod compile: what was read for them at the edge ([`Inputs`]), and each
//! agent's skills merged and judged against what it was granted ([`judge_all`]).

use crate::diag::Diagnostic;
use crate::grant::Plan;
use crate::pod::Pod;
use crate::project::native::NativePlan;
use crate::registry::Registry;
use crate::skill::carried::{self, Entry, Judged, Layer, Skill};
use crate::skill::resolve::{Granted, Inventory};
use crate::sourcemap::SourceMap;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What the edge read for skills.
#[derive(Debug, Default)]
pub(crate) struct Inputs {
    /// `x-claw.skills` entries by path as written.
    pub operator: crate::skill::operator::Read,
    /// Each described service's descriptor skill.
    pub descriptor: BTreeMap<String, Arc<Skill>>,
    /// The CLIs each agent service's image has (`claw.cli`, and its `PATH` when read).
    pub cli: BTreeMap<String, BTreeSet<String>>,
}

/// The image label that lists an image's CLIs, comma-separated.
pub(crate) const CLI_LABEL: &str = "claw.cli";

/// The CLIs an agent's image has: its `claw.cli` label (comma-separated names) and the
/// executables in its `PATH`, when the image's layers were read.
pub(crate) fn clis(label: Option<&str>, executables: Option<&BTreeSet<String>>) -> BTreeSet<String> {
    let mut out: BTreeSet<String> =
        label.into_iter().flat_map(|l| l.split(',')).map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
    out.extend(executables.into_iter().flatten().cloned());
    out
}

/// Every skill an agent carries, once: `clawc::skill::missing_section` for those that
/// lack a required section (a descriptor skill no agent carries is not linted).
pub(crate) fn lint(pod: &Pod, inputs: &Inputs, strict: bool, sources: &SourceMap) -> Vec<Diagnostic> {
    let mut seen = std::collections::HashSet::new();
    pod.services
        .values()
        .filter_map(|s| s.claw.as_ref().filter(|c| c.role == crate::pod::Role::Agent))
        .flat_map(|c| layers(c, inputs))
        .filter(|(_, skill)| seen.insert(Arc::as_ptr(skill)))
        .flat_map(|(_, skill)| skill.lint(strict, sources))
        .collect()
}

/// Each agent service's skills, merged and judged (replicas share them: tier, grants and
/// image are the service's).
pub(crate) fn judge_all(
    pod: &Pod,
    reg: &Registry,
    plans: &BTreeMap<String, Plan>,
    native: &BTreeMap<String, NativePlan>,
    inputs: &Inputs,
    sources: &SourceMap,
) -> (BTreeMap<String, Vec<Judged>>, Vec<Diagnostic>) {
    let mut out = BTreeMap::new();
    let mut diags = Vec::new();
    for (service, plan) in plans {
        let svc = &pod.services[service];
        let Some(claw) = svc.claw.as_ref() else { continue };
        let (entries, ds) = carried::merge(layers(claw, inputs), service);
        diags.extend(ds);
        if entries.is_empty() {
            continue;
        }
        let (tier, bad) = carried::tier(svc.environment.get(TIER_ENV), service);
        diags.extend(bad);
        let inventory = inventory(reg, plan, native.get(service), inputs.cli.get(service));
        let (judged, ds) = carried::judge(entries, tier, &inventory, service, sources);
        diags.extend(ds);
        out.insert(service.clone(), judged);
    }
    (out, diags)
}

/// The environment variable that sets an agent's SPEC-0023 tier.
pub(crate) const TIER_ENV: &str = "CLAUDEOPS_TIER";

/// An agent's skills in merge order: its service surfaces' descriptor skills, then its
/// `x-claw.skills` (an entry that could not be read was reported already).
fn layers(claw: &crate::pod::Claw, inputs: &Inputs) -> Vec<(Layer, Arc<Skill>)> {
    let descriptor = claw
        .surfaces
        .iter()
        .filter(|s| s.scheme == "service")
        .filter_map(|s| inputs.descriptor.get(&s.target).map(|k| (Layer::Descriptor { service: s.target.clone() }, k.clone())));
    let operator = claw.skills.iter().filter_map(|e| inputs.operator.get(&e.value).map(|k| (Layer::Pod { loc: e.loc }, k.clone())));
    descriptor.chain(operator).collect()
}

/// What an agent has ahead of time: its granted tools (by the name its runner shows the
/// model) and its image's CLIs.
fn inventory(reg: &Registry, plan: &Plan, native: Option<&NativePlan>, cli: Option<&BTreeSet<String>>) -> Inventory {
    let granted = plan
        .tools
        .iter()
        .map(|g| {
            let name = reg.tool_name(&g.service, g.index);
            Granted {
                service: g.service.to_string(),
                tool: reg.tool(&g.service, g.index).name.clone(),
                shown: crate::project::native::shown_name(native, &name),
            }
        })
        .collect();
    Inventory { granted, cli: cli.cloned().unwrap_or_default() }
}

/// The skills an agent's tree holds (those not held back), for `explain` and the report.
pub(crate) fn written(judged: &[Judged]) -> impl Iterator<Item = &Entry> {
    judged.iter().filter(|j| j.held_back.is_none()).map(|j| &j.entry)
}
