//! The descriptors `claw up` builds in (`compose_up.go`'s `builtinClawAPIDescriptor` and
//! `builtinClawWallDescriptor`), first in the chain as in Clawdapus: claw-api's governance
//! API (the `fleet-alerts` feed, its endpoints) and the conversation wall's two tools. They
//! are decoded and checked like any descriptor; the report names their origin `built-in`.

use super::{DescriptorSource, Loaded, OriginKind, Request, SkillRoot, SourceResult};
use crate::pod::{CLAW_API, CLAW_WALL};

pub(crate) struct BuiltIn;

/// Whether a service of the pod itself (not an injected one) is described by a built-in
/// descriptor: Clawdapus gives a service named claw-wall the wall's descriptor even when
/// it injects no wall (a pod service named claw-api is an ordinary service).
pub(crate) fn describes_pod_service(name: &str) -> bool {
    name == CLAW_WALL
}

/// The built-in descriptor text for service `name`, if it has one.
pub(crate) fn text(name: &str) -> Option<&'static str> {
    match name {
        CLAW_API => Some(include_str!("builtin/claw-api.claw-describe.json")),
        CLAW_WALL => Some(include_str!("builtin/claw-wall.claw-describe.json")),
        _ => None,
    }
}

impl DescriptorSource for BuiltIn {
    fn describe(&self, req: &Request) -> SourceResult {
        let Some(text) = text(&req.service.name).filter(|_| req.service.builtin) else { return Ok(None) };
        let name = format!("<built-in {} descriptor>", req.service.name);
        Ok(Some(Loaded::file(OriginKind::BuiltIn, name, text.to_string(), SkillRoot::Dir(req.pod_dir.to_path_buf()))))
    }
}
