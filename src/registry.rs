//! The canonical IR: every described service with its descriptor, and the pod-global
//! feed registry. Tools stay with their service (namespaced `<service>.<tool>` later).

use crate::describe::json_span::{Locator, Seg};
use crate::describe::{Described, FeedSpec, RunnerFact, ServiceDescriptor, ToolName};
use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, Loc, SourceMap};
use std::collections::BTreeMap;

pub(crate) use crate::diag::catalogue::registry as codes;

/// A feed any agent may subscribe to by name.
#[derive(Clone, Debug, Hash)]
pub struct FeedDef {
    pub source: String,
    pub spec: FeedSpec,
    /// The declaring descriptor and the feed's index in it (to point at its name).
    pub file: FileId,
    pub index: usize,
}

#[derive(Clone, Debug, Hash, Default)]
pub struct Registry {
    /// Every service with a descriptor, by name.
    pub services: BTreeMap<String, ServiceDescriptor>,
    /// Feeds by their pod-global name.
    pub feeds: BTreeMap<String, FeedDef>,
    /// Agent service → its runner, where an image or its build Dockerfile says.
    pub runners: BTreeMap<String, RunnerFact>,
}

impl Registry {
    /// Registers the descriptors (visited by service name, so a collision always names
    /// the two services in sorted order).
    pub fn build(described: BTreeMap<String, Described>, sources: &SourceMap) -> (Registry, Vec<Diagnostic>) {
        let mut services = BTreeMap::new();
        let mut runners = BTreeMap::new();
        for (name, d) in described {
            if let Some(r) = d.runner {
                runners.insert(name.clone(), r);
            }
            if let Some(desc) = d.descriptor {
                services.insert(name, desc);
            }
        }
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
        (Registry { services, feeds, runners }, crate::diag::cap(diags))
    }

    /// Tool `index` of `service` (both come from a resolved grant, so they exist).
    pub fn tool(&self, service: &str, index: usize) -> &crate::describe::Tool {
        &self.services[service].descriptor.tools[index]
    }

    /// The `service.tool` name of tool `index` of `service`.
    pub fn tool_name<'a>(&'a self, service: &'a str, index: usize) -> ToolName<'a> {
        ToolName::new(service, &self.tool(service, index).name)
    }

    /// Services whose descriptor declares at least one tool (the tool registry).
    pub fn tool_services(&self) -> impl Iterator<Item = (&str, &ServiceDescriptor)> {
        self.services.iter().filter(|(_, d)| !d.descriptor.tools.is_empty()).map(|(s, d)| (s.as_str(), d))
    }
}
