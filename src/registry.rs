//! The canonical IR: every described service with its descriptor, and the pod-global
//! feed registry. Tools stay with their service (namespaced `<service>.<tool>` later).

use crate::describe::json_span::{Locator, Seg};
use crate::describe::{Descriptor, FeedSpec};
use crate::diag::Diagnostic;
use crate::source::OriginKind;
use crate::sourcemap::{FileId, Loc, SourceMap};
use std::collections::BTreeMap;

pub use crate::diag::catalogue::registry as codes;

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
    /// The declaring descriptor and the feed's index in it (to point at its name).
    pub file: FileId,
    pub index: usize,
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
        // Locators of the descriptors that declared a feed first, each built once.
        let mut firsts: std::collections::HashMap<FileId, Locator> = std::collections::HashMap::new();
        for (svc, d) in &services {
            // One locator per descriptor: every feed of it may collide.
            let mut locator = Locator::new(sources.get(d.file));
            for (i, spec) in d.descriptor.feeds.iter().enumerate() {
                if let Some(first) = feeds.get(&spec.name) {
                    let span = locator.span_of(&[Seg::Key("feeds".into()), Seg::Index(i), Seg::Key("name".into())]);
                    let loc = Loc { file: d.file, span };
                    let msg = format!("feed name \"{}\" is declared by both \"{}\" and \"{svc}\"", spec.name, first.source);
                    let at = firsts.entry(first.file).or_insert_with(|| Locator::new(sources.get(first.file)));
                    let first_span = at.span_of(&[Seg::Key("feeds".into()), Seg::Index(first.index), Seg::Key("name".into())]);
                    diags.push(
                        Diagnostic::error(codes::FEED_COLLISION, msg)
                            .at(loc)
                            .also(Loc { file: first.file, span: first_span }, "first declared here")
                            .help("feed names are global across the pod: rename one of the two feeds"),
                    );
                    continue;
                }
                feeds.insert(spec.name.clone(), FeedDef { source: svc.clone(), spec: spec.clone(), file: d.file, index: i });
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
