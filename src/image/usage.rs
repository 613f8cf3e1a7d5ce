//! What the pod needs from images: which references to read (and whether their files),
//! which missing images are errors, and each agent's runner label. A missing image is an
//! error when the pod uses what it would provide: a provider's tools (a grant), feeds (an
//! inline feed's `source`) or memory, when no file describes the service; or an agent's
//! own runner label (`claw.type`), unless its build context's Dockerfile gives it. Any
//! other missing image is a warning, so the output never silently depends on what
//! happens to be in the local image store.

use super::{ImageSet, TYPE_LABEL, diags};
use crate::diag::Diagnostic;
use crate::pod::{FeedEntry, Pod, Role, Service};
use std::collections::{BTreeMap, BTreeSet};

/// Image references → whether their files are wanted (`false`: labels only). Files are
/// not wanted when a source that wins over the image describes the service (a file, or
/// the descriptor `claw up` builds in for a service named `claw-wall`).
pub(crate) fn references(pod: &Pod, overrides: &BTreeSet<String>) -> BTreeMap<String, bool> {
    let mut out: BTreeMap<String, bool> = BTreeMap::new();
    for (name, svc) in &pod.services {
        let Some(image) = &svc.image else { continue };
        let described_by_file = overrides.contains(name)
            || svc.claw.as_ref().is_some_and(|c| c.describe_file.is_some())
            || crate::source::builtin::describes_pod_service(name);
        *out.entry(image.value.clone()).or_default() |= !described_by_file;
    }
    out
}

/// Why the pod needs `service`'s image, if it does: the first use found, in words.
fn use_of(pod: &Pod, service: &str, svc: &Service, described: &BTreeSet<String>) -> Option<String> {
    if svc.claw.as_ref().is_some_and(|c| c.role == Role::Agent) && svc.build.is_none() {
        return Some(format!("its runner label {TYPE_LABEL} is read from it"));
    }
    if described.contains(service) {
        return None;
    }
    for (consumer, s) in &pod.services {
        let Some(claw) = s.claw.as_ref().filter(|c| c.role == Role::Agent) else { continue };
        if claw.tools.iter().any(|g| g.service.value == service) {
            return Some(format!("agent \"{consumer}\" is granted its tools"));
        }
        if claw.feeds.iter().any(|f| matches!(f, FeedEntry::Inline(i) if i.source.value == service)) {
            return Some(format!("agent \"{consumer}\" subscribes to its feed"));
        }
        if claw.memory.as_ref().is_some_and(|m| m.service.value == service) {
            return Some(format!("agent \"{consumer}\" uses it as memory"));
        }
    }
    None
}

/// A diagnostic per service whose image no source had: an error when the pod uses it,
/// else a warning. `described` are the services some source described.
pub(crate) fn missing(pod: &Pod, set: &ImageSet, described: &BTreeSet<String>) -> Vec<Diagnostic> {
    if set.disabled {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (name, svc) in &pod.services {
        let Some(image) = &svc.image else { continue };
        let Some(tried) = set.tried_for(&image.value) else { continue };
        let r = &image.value;
        let help = format!(
            "pull or build it (`docker pull {r}`), or point clawc at a copy: --images oci:DIR or --images archive:TAR \
             (`docker save {r} -o images.tar`); --images none compiles without reading images"
        );
        let d = match use_of(pod, name, svc, described) {
            Some(why) => {
                Diagnostic::error(diags::NOT_FOUND, format!("service \"{name}\": image {r} was not found, and {why} (tried: {tried})"))
            }
            None => Diagnostic::warning(
                diags::NOT_FOUND,
                format!("service \"{name}\": image {r} was not found (tried: {tried}); nothing the pod uses comes from it"),
            ),
        };
        out.push(d.at(image.loc).help(help));
    }
    out
}
