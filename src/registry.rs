//! The canonical IR: every described service with its descriptor, and the pod-global
//! feed registry. Tools stay with their service (namespaced `<service>.<tool>` later).

use crate::describe::json_span::{Locator, Seg};
use crate::describe::{Descriptor, FeedSpec};
use crate::diag::Diagnostic;
use crate::source::OriginKind;
use crate::sourcemap::{FileId, Loc, SourceMap};
use std::collections::BTreeMap;

pub mod codes {
    pub const FEED_COLLISION: &str = "clawc::register::feed_collision";
}

/// A service's descriptor and where it came from.
#[derive(Clone, Debug)]
pub struct Described {
    pub descriptor: Descriptor,
    pub file: FileId,
    pub origin: OriginKind,
    /// The descriptor's skill file: (basename, pod-relative source path, text).
    pub skill: Option<Skill>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub source: String,
    pub text: String,
}

/// A feed any agent may subscribe to by name.
#[derive(Clone, Debug)]
pub struct FeedDef {
    pub source: String,
    pub spec: FeedSpec,
}

#[derive(Clone, Debug, Default)]
pub struct Registry {
    /// Every described service, by name.
    pub services: BTreeMap<String, Described>,
    /// Feeds by their pod-global name.
    pub feeds: BTreeMap<String, FeedDef>,
    /// Agent service → its runner (`claw.type`), where an image or Dockerfile says.
    pub runners: BTreeMap<String, String>,
}

impl Registry {
    /// Registers the descriptors (visited by service name, so a collision always names
    /// the two services in sorted order).
    pub fn build(services: BTreeMap<String, Described>, sources: &SourceMap) -> (Registry, Vec<Diagnostic>) {
        let mut feeds: BTreeMap<String, FeedDef> = BTreeMap::new();
        let mut diags = Vec::new();
        for (svc, d) in &services {
            // One locator per descriptor: every feed of it may collide.
            let mut locator = Locator::new(sources.get(d.file));
            for (i, spec) in d.descriptor.feeds.iter().enumerate() {
                if let Some(first) = feeds.get(&spec.name) {
                    let span = locator.span_of(&[Seg::Key("feeds".into()), Seg::Index(i), Seg::Key("name".into())]);
                    let loc = Loc { file: d.file, span };
                    let msg = format!("feed name \"{}\" is declared by both \"{}\" and \"{svc}\"", spec.name, first.source);
                    diags.push(
                        Diagnostic::error(codes::FEED_COLLISION, msg)
                            .at(loc)
                            .help("feed names are global across the pod: rename one of the two feeds"),
                    );
                    continue;
                }
                feeds.insert(spec.name.clone(), FeedDef { source: svc.clone(), spec: spec.clone() });
            }
        }
        (Registry { services, feeds, runners: BTreeMap::new() }, crate::diag::cap(diags))
    }

    /// Tool `index` of `service` (both come from a resolved grant, so they exist).
    pub fn tool(&self, service: &str, index: usize) -> &crate::describe::Tool {
        &self.services[service].descriptor.tools[index]
    }

    /// Services whose descriptor declares at least one tool (the tool registry).
    pub fn tool_services(&self) -> impl Iterator<Item = (&str, &Described)> {
        self.services.iter().filter(|(_, d)| !d.descriptor.tools.is_empty()).map(|(s, d)| (s.as_str(), d))
    }
}
