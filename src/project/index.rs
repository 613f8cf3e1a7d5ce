//! The report index, `report.json`, and the index kept for the next compile: the index
//! is the same bytes for every edit that leaves its inputs alone (a grant changed, a
//! tool's schema edited), and rendering it is a tenth of a watched one-agent edit, so a
//! compile takes the last one's bytes when the digest of its inputs is unchanged: a watch
//! from memory, any other compile from the user cache (`pod/v1/<pod>.index`, beside the
//! pod's tree).
//!
//! [`index`] reads the pod's name, the agent services with plans and their counts, the
//! registry (through [`super::report::services_report`]), the source files' names and the
//! warnings. The key digests each of them; anything `index` reads in future must join
//! [`key`] (`tests/it/kept.rs` compares a kept index with a rendered one over every
//! golden case edited line by line).

use super::report;
use crate::diag::Diagnostic;
use crate::digest::Feed;
use crate::grant::Plan;
use crate::pod::Pod;
use crate::registry::Registry;
use crate::sourcemap::SourceMap;
use std::collections::BTreeMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

/// Bumped when what the key covers changes.
const KEY_VERSION: &str = "clawc-index-key-1";

/// The report index, `report.json`: the pod, the agents of the services that have plans,
/// its services, and every warning.
fn report<'a>(
    pod: &'a Pod,
    reg: &'a Registry,
    plans: &'a BTreeMap<String, Plan>,
    sources: &'a SourceMap,
    warnings: &[Diagnostic],
) -> report::Report<'a> {
    report::Report {
        version: report::VERSION,
        pod: &pod.name,
        agents: report::Agents::of(agent_services(pod, plans)),
        services: report::services_report(pod, reg, sources),
        warnings: warnings.iter().map(|w| w.to_json(sources)).collect(),
    }
}

/// The index rendered into memory.
fn rendered(report: &report::Report<'_>) -> Arc<[u8]> {
    if report.agents.len() >= EXACT_FROM {
        crate::artifact::json::to_go_json_shared(report)
    } else {
        crate::artifact::json::to_go_json(report).into()
    }
}

/// `report.json` as a compile puts it: its bytes, or, when it would be longer than the
/// sink holds, what renders it as it is written (each time the same bytes).
pub(crate) enum Index<'a> {
    Held(Arc<[u8]>),
    Streamed(report::Report<'a>),
}

impl Index<'_> {
    /// Writes it into `w` (through a buffer: the renderer writes small pieces).
    pub(crate) fn write(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        match self {
            Index::Held(bytes) => w.write_all(bytes),
            Index::Streamed(report) => crate::artifact::json::write_go_json_line(w, report),
        }
    }
}

/// About how many bytes the index spends on each agent id it lists (its id, service and
/// report file, indented): from past [`Index::Streamed`] when that many exceed what the
/// sink holds.
const BYTES_PER_AGENT: usize = 110;

/// From how many agent ids the index is rendered twice, to size its buffer exactly: it
/// lists each (about 110 bytes apiece), and a buffer grown by doubling, then copied,
/// made it the largest block of a big compile (7.5 MB at 30,000 agent ids), where the
/// second rendering costs about 1 %; below, the index is under a megabyte.
const EXACT_FROM: usize = 10_000;

/// The agent services with plans, and each one's `count`.
fn agent_services<'a>(pod: &'a Pod, plans: &'a BTreeMap<String, Plan>) -> impl Iterator<Item = (&'a str, u32)> {
    plans.keys().filter_map(|s| Some((s.as_str(), pod.services.get(s.as_str())?.claw.as_ref()?.count)))
}

/// The digest of everything [`index`] reads.
fn key(pod: &Pod, reg: &Registry, plans: &BTreeMap<String, Plan>, sources: &SourceMap, warnings: &[Diagnostic]) -> [u8; 32] {
    let mut h = Feed::default();
    (KEY_VERSION, report::VERSION, &pod.name).hash(&mut h);
    agent_services(pod, plans).for_each(|a| a.hash(&mut h));
    reg.services.len().hash(&mut h);
    for (name, service) in &reg.services {
        // The descriptor's content is digested once (`SharedDescriptor`).
        (name, pod.builtins.get(name).map(|b| &b.why), sources.name(service.file), service).hash(&mut h);
    }
    warnings.len().hash(&mut h);
    for w in warnings {
        h.bytes(&serde_json::to_vec(&w.to_json(sources)).expect("a diagnostic serializes"));
    }
    h.digest()
}

/// The index the last compile rendered, by the digest of its inputs: none kept unless
/// made with [`KeptIndex::kept`] (in memory, for a watch) or [`KeptIndex::or_stored`] (in
/// the user cache, for the next process). Clones share what is kept.
#[derive(Clone, Default)]
pub struct KeptIndex(Option<Keeping>);

#[derive(Clone)]
enum Keeping {
    Memory(Arc<Mutex<Held>>),
    /// The file of the user cache, and the SHA-256 of the clawc build it is for.
    Stored(Arc<std::path::Path>, [u8; 32]),
}

/// The last index rendered, and the digest of its inputs.
type Held = Option<([u8; 32], Arc<[u8]>)>;

impl std::fmt::Debug for KeptIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = match &self.0 {
            Some(Keeping::Memory(k)) => format!("{:?}", k.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map(|(_, b)| b.len())),
            Some(Keeping::Stored(at, _)) => at.display().to_string(),
            None => "none".to_string(),
        };
        f.debug_tuple("KeptIndex").field(&held).finish()
    }
}

/// The head of a stored index: what it is, then the build and the key it is for, so a
/// file for anything else is never taken.
const MAGIC: &[u8; 16] = b"clawc-index-1\0\0\0";

impl KeptIndex {
    /// One that keeps each compile's index for the next.
    pub fn kept() -> KeptIndex {
        KeptIndex(Some(Keeping::Memory(Arc::default())))
    }

    /// This one if it keeps in memory; else one that keeps the index in the file `at` of
    /// the user cache for the next compile of the pod by the clawc build `build` (nothing
    /// without `at`). The file is trusted as the stat record is: only clawc writes it,
    /// never in the repository under review, checksummed, and taken only for this build
    /// and exactly these inputs.
    pub(crate) fn or_stored(&self, at: Option<(std::path::PathBuf, [u8; 32])>) -> KeptIndex {
        match (&self.0, at) {
            (Some(Keeping::Memory(_)), _) | (_, None) => self.clone(),
            (_, Some((at, build))) => KeptIndex(Some(Keeping::Stored(at.into(), build))),
        }
    }

    /// The index: the kept bytes when its inputs are what they were, else rendered (and
    /// kept, when this keeps); made as it is written ([`Index::Streamed`], never kept)
    /// when it would be longer than `held` bytes.
    pub(crate) fn index<'a>(
        &self,
        pod: &'a Pod,
        reg: &'a Registry,
        plans: &'a BTreeMap<String, Plan>,
        sources: &'a SourceMap,
        warnings: &[Diagnostic],
        held: usize,
    ) -> Index<'a> {
        let agents: usize = agent_services(pod, plans).map(|(_, count)| count.max(1) as usize).sum();
        let report = || report(pod, reg, plans, sources, warnings);
        if agents.saturating_mul(BYTES_PER_AGENT) > held {
            return Index::Streamed(report());
        }
        let kept = match &self.0 {
            None => return Index::Held(rendered(&report())),
            Some(Keeping::Stored(at, build)) => return Index::Held(stored(at, build, key(pod, reg, plans, sources, warnings), report)),
            Some(Keeping::Memory(kept)) => kept,
        };
        let key = key(pod, reg, plans, sources, warnings);
        let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        match &*kept {
            Some((k, bytes)) if *k == key => Index::Held(Arc::clone(bytes)),
            _ => {
                let bytes = rendered(&report());
                *kept = Some((key, Arc::clone(&bytes)));
                Index::Held(bytes)
            }
        }
    }
}

/// The index stored at `at` when it was rendered by `build` from inputs of digest `key`;
/// else rendered, and stored in its place (a failed store is ignored: it only saves work).
fn stored<'a>(at: &std::path::Path, build: &[u8; 32], key: [u8; 32], report: impl FnOnce() -> report::Report<'a>) -> Arc<[u8]> {
    let head = [&MAGIC[..], build, &key].concat();
    if let Some(body) = crate::disk::load_sealed(at, &head) {
        return body[head.len()..].into();
    }
    let bytes = rendered(&report());
    crate::disk::store_sealed(at, &[&head[..], &bytes].concat());
    bytes
}
