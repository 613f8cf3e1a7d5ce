//! The build context: the file its Clawfile/Dockerfile `LABEL claw.describe` names, else
//! `<context>/.claw-describe.json`, confined to the context (as Clawdapus reads it when the
//! image is absent).

use super::fs::ReadError;
use super::{DescriptorSource, Loaded, OriginKind, Request, SkillRoot, SourceResult, diags, fs};
use crate::diag::Diagnostic;

pub(crate) struct BuildContext;

impl DescriptorSource for BuildContext {
    fn describe(&self, req: &Request) -> SourceResult {
        build_context(req)
    }
}

/// The build context's descriptor: the file its Dockerfile's `LABEL claw.describe` names,
/// else `.claw-describe.json`, confined to the context.
pub(crate) fn build_context(req: &Request) -> SourceResult {
    let Some(build) = &req.service.build else { return Ok(None) };
    let context = fs::normalize(&req.pod_dir.join(&build.context));
    let label = req.dockerfile()?.and_then(|d| d.labels.get("claw.describe").map(|l| (l.clone(), d.name.clone())));
    let path = match &label {
        Some((l, dockerfile)) => req.log.contained(&context, l, fs::Boundary::BuildContext).map_err(|why| {
            vec![
                Diagnostic::error(
                    diags::PATH_ESCAPE,
                    format!("service \"{}\": LABEL claw.describe in `{dockerfile}`: {why}", req.service.name),
                )
                .at(build.loc)
                .help("a label path names a file inside the build context, e.g. /service.claw-describe.json"),
            ]
        })?,
        // The implicit file is confined to the context as a label path is.
        None => req.log.contained(&context, ".claw-describe.json", fs::Boundary::BuildContext).map_err(|why| {
            vec![
                Diagnostic::error(diags::PATH_ESCAPE, format!("service \"{}\": .claw-describe.json: {why}", req.service.name))
                    .at(build.loc)
                    .help("the build context's descriptor must be a file inside the context"),
            ]
        })?,
    };
    let name = fs::relative_name(req.pod_dir, &path);
    match req.log.read(&path, &name, "descriptor") {
        Ok(text) => Ok(Some(Loaded::file(OriginKind::BuildContext, name, text, SkillRoot::BuildContext(context)))),
        Err(ReadError::Missing) => Ok(None),
        Err(ReadError::Invalid(d) | ReadError::Io(d)) => Err(vec![d.at(build.loc)]),
    }
}
