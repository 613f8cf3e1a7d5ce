//! `.claw-discovered/<service>.claw-describe.json`: the snapshot `claw discover` writes,
//! always for `mcp-stdio` sidecars (a warning when stale) and for build services only as
//! a `runtime-descriptor` snapshot of the service's own image.

use super::fs::ReadError;
use super::{DescriptorSource, Loaded, OriginKind, Request, SkillRoot, SourceResult, diags, fs, with_build_root};
use crate::diag::Diagnostic;

pub(crate) struct Discovered;

/// `.claw-discovered/<name>` sanitising: `/ \ :` → `-`; empty, `.` or `..` → `service`.
fn sanitize(name: &str) -> String {
    let s: String = name.chars().map(|c| if matches!(c, '/' | '\\' | ':') { '-' } else { c }).collect();
    if matches!(s.as_str(), "" | "." | "..") { "service".to_string() } else { s }
}

impl DescriptorSource for Discovered {
    fn describe(&self, req: &Request) -> SourceResult {
        let svc = req.service;
        let sidecar = svc.stdio.as_ref().filter(|_| svc.sidecar);
        if sidecar.is_none() && svc.build.is_none() {
            return Ok(None);
        }
        let path = req.pod_dir.join(".claw-discovered").join(format!("{}.claw-describe.json", sanitize(&svc.name)));
        let name = fs::relative_name(req.pod_dir, &path);
        let text = match req.log.read(&path, &name, "snapshot") {
            Ok(t) => t,
            Err(ReadError::Missing) => return Ok(None),
            Err(ReadError::Invalid(d) | ReadError::Io(d)) => return Err(vec![d]),
        };
        let discovery = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v.get("x-claw-discovery").cloned());
        let field =
            |k: &str| discovery.as_ref().and_then(|d| d.get(k)).and_then(|v| v.as_str()).map(str::trim).unwrap_or_default().to_string();
        let mut warnings = Vec::new();
        if let Some(cmd) = sidecar {
            let args: Vec<String> = discovery
                .as_ref()
                .and_then(|d| d.get("args"))
                .and_then(|a| a.as_array())
                .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            if discovery.is_some() && (field("command") != cmd.command || args != cmd.args) {
                let s = &svc.name;
                warnings.push(
                    Diagnostic::warning(
                        diags::STALE_SNAPSHOT,
                        format!("service \"{s}\" discovered descriptor is stale; run 'claw discover {s}' to refresh .claw-discovered"),
                    )
                    .at(svc.loc)
                    .help("the snapshot records another mcp-stdio command or args than the pod declares"),
                );
            }
        } else {
            // A build service uses only a runtime-descriptor snapshot of its own image.
            let image = svc.image.as_ref().map(|i| i.value.as_str()).unwrap_or_default();
            if field("command") != "runtime-descriptor" || field("wrapper_image") != image {
                return Ok(None);
            }
        }
        let skill_root = SkillRoot::Dir(req.pod_dir.join(".claw-discovered"));
        let loaded = Loaded { warnings, ..Loaded::file(OriginKind::Discovered, name, text, skill_root) };
        Ok(Some(with_build_root(loaded, req)))
    }
}
