//! The render key: a digest of everything one agent service's files are made from, so a
//! compile can take them from the tree as the previous compile wrote them instead of
//! rendering them again (see `output::memo`, which keeps each service's key and files).
//!
//! The key is complete by construction: it digests the arguments of the projection of one
//! service (`render_service` in the parent module) and of the leak scan its files pass,
//! not a list of the settings that happen to shape them. Those are the pod (the service's
//! own entry, and every other service as far as the render of one service can look at it:
//! its name, ports, image, build and environment; the injected services; the pod's name),
//! the whole registry, the service's plan, native plan, skills and runner, the names of
//! the source files (provenance in the report names them), and the token values the scan
//! looks for. Each is digested through its derived `Hash`, which feeds every field (a
//! field added to any of these types joins the key); a [`Span`] hashes by its line,
//! column and length, not its byte offsets, so an edit that shifts the bytes of later
//! services without moving their lines keeps their keys. Another agent's own `x-claw`
//! is left out: what it changes for this service is in this service's plan and skills,
//! and in the injected services. Anything the projection of a service is given in future
//! must join [`Keys::of`]; `tests/it/reuse.rs` compares recompiles with and without the
//! memo over every golden case edited line by line.
//!
//! [`Span`]: crate::sourcemap::Span

use super::native::NativePlan;
use crate::digest::Feed;
use crate::grant::Plan;
use crate::pod::Pod;
use crate::registry::Registry;
use crate::skill::carried::Judged;
use crate::sourcemap::SourceMap;
use std::collections::BTreeMap;
use std::hash::Hash;

/// Bumped when what the key covers changes, so no key of an older clawc ever matches.
const KEY_VERSION: &str = "clawc-render-key-3";

/// Each agent service's render key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Keys(pub BTreeMap<String, [u8; 32]>);

/// What the keys are made from beside the resolved pod: what the edge knows.
pub(crate) struct Context<'a> {
    /// What identifies the running clawc (its executable's identity): another build
    /// may render differently.
    pub clawc: &'a [u8],
    pub sources: &'a SourceMap,
    /// The token values the leak scan looks for (a changed one must scan again).
    pub secrets: &'a BTreeMap<String, String>,
    /// How many threads may compute the keys (the keys are the same whatever it is).
    pub threads: usize,
}

/// The pieces of one compile the keys are made from.
pub(crate) struct Resolved<'a> {
    pub pod: &'a Pod,
    pub reg: &'a Registry,
    pub plans: &'a BTreeMap<String, Plan>,
    pub natives: &'a BTreeMap<String, NativePlan>,
    pub skills: &'a BTreeMap<String, Vec<Judged>>,
}

impl Keys {
    /// The key of every agent service with a plan.
    pub(crate) fn of(cx: &Context<'_>, r: &Resolved<'_>) -> Keys {
        let shared = shared(cx, r);
        let plans: Vec<(&String, &Plan)> = r.plans.iter().collect();
        // Each service's own part on every core: it walks the service's whole plan.
        let runs = crate::jobs::map_runs(&plans, cx.threads, 16, |_, run| {
            let key = |&(service, plan): &(&String, &Plan)| {
                let mut h = Feed::default();
                h.bytes(&shared);
                (service, r.pod.services.get(service), plan, r.natives.get(service), r.skills.get(service), r.reg.runners.get(service))
                    .hash(&mut h);
                (service.clone(), h.digest())
            };
            run.iter().map(key).collect::<Vec<_>>()
        });
        Keys(runs.into_iter().flatten().collect())
    }
}

/// The digest of what every service's render may read beside its own entry.
fn shared(cx: &Context<'_>, r: &Resolved<'_>) -> [u8; 32] {
    let mut h = Feed::default();
    KEY_VERSION.hash(&mut h);
    h.bytes(cx.clawc);
    cx.secrets.hash(&mut h);
    for (id, file) in cx.sources.files() {
        (id, &file.name).hash(&mut h);
    }
    (&r.pod.file, &r.pod.name, &r.pod.master, &r.pod.builtins).hash(&mut h);
    for (name, service) in &r.pod.services {
        // An agent's own `x-claw` is in its own key; another agent's is read only through
        // what the pod made of it (the injected services, above) and the registry.
        let claw = service.claw.as_ref().filter(|c| c.role != crate::pod::Role::Agent);
        (name, &service.loc, &service.image, &service.build, &service.environment, &service.ports, claw).hash(&mut h);
        service.claw.as_ref().map(|c| (c.role, &c.describe_file, &c.stdio, c.describe_only)).hash(&mut h);
    }
    // The registry, most of what is fed here (every tool's schemas): its descriptors are
    // digested a service each, on every core, and those digests fed in order (each
    // descriptor's content is digested once, when first hashed: `SharedDescriptor`). Taken apart
    // whole, so a field added to it must be fed too.
    let Registry { services, feeds, runners } = r.reg;
    let described: Vec<_> = services.iter().collect();
    let digests = crate::jobs::map_runs(&described, cx.threads, 4, |_, run| run.iter().map(crate::digest::of_hash).collect::<Vec<_>>());
    described.len().hash(&mut h);
    digests.iter().flatten().for_each(|d| h.bytes(d));
    (feeds, runners).hash(&mut h);
    h.digest()
}
