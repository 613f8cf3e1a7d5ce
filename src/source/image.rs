//! The image as a descriptor source: the descriptor its `claw.describe` label names (or
//! `/.claw-describe.json`), and the MCP `tools/list` snapshot its `claw.tools` label names
//! (or `/.claw-tools.json`), as read (the describe stage converts it). Only an implicit path may be
//! missing; a labelled one must be there. The files were read by [`crate::image::fetch`];
//! this only looks them up.

use super::{DescriptorSource, Loaded, OriginKind, Request, SkillRoot, Snapshot, SourceResult, Text};
use crate::diag::Diagnostic;
use crate::image::{
    DESCRIBE_LABEL, FileRead, ImageFacts, ImageSet, MCP_PATH_LABEL, TOOLS_LABEL, diags, image_path, layers::MAX_FILE_BYTES,
};
use std::sync::Arc;

pub(crate) struct Image(pub Arc<ImageSet>);

impl DescriptorSource for Image {
    fn describe(&self, req: &Request) -> SourceResult {
        self.describe_image(req)
    }
}

impl Image {
    /// The descriptor and snapshot the service's image bakes.
    pub(crate) fn describe_image(&self, req: &Request) -> SourceResult {
        let Some(reference) = &req.service.image else { return Ok(None) };
        let Some(facts) = self.0.found.get(&reference.value) else { return Ok(None) };
        let at = |d: Diagnostic| vec![d.at(reference.loc)];
        let (dpath, dlabel) = facts.describe_path();
        let descriptor = optional(facts, &dpath, dlabel.then_some(DESCRIBE_LABEL)).map_err(at)?;
        let (tpath, tlabel) = facts.tools_path();
        let snapshot = optional(facts, &tpath, tlabel.then_some(TOOLS_LABEL)).map_err(at)?;
        if descriptor.is_none() && snapshot.is_none() {
            return Ok(None);
        }
        // An image's files are this source's inputs, as files on disk are the others'.
        let descriptor = descriptor.map(|text| Text { name: facts.file_name(&dpath), text });
        let snapshot = snapshot.map(|text| {
            let mcp_path = facts.label(MCP_PATH_LABEL).and_then(image_path).unwrap_or_else(|| "/mcp".to_string());
            Snapshot { file: Text { name: facts.file_name(&tpath), text }, mcp_path, loc: Some(reference.loc) }
        });
        for t in descriptor.iter().chain(snapshot.as_ref().map(|s| &s.file)) {
            req.log.record(&t.name, "image", Some(t.text.as_bytes()));
        }
        let skill_root = SkillRoot::Image(facts.clone());
        Ok(Some(Loaded { kind: OriginKind::Image, descriptor, snapshot, skill_root, warnings: Vec::new() }))
    }
}

/// The text of `raw` in the image, which must be there. `named_by` is the label (or
/// field) that named it, for the diagnostic.
pub(crate) fn required(facts: &ImageFacts, raw: &str, named_by: Option<&str>) -> Result<String, Diagnostic> {
    match facts.files.get(raw).unwrap_or(&FileRead::Missing) {
        FileRead::Text(t) => Ok(t.clone()),
        r => Err(file_error(facts, &image_path(raw).unwrap_or_else(|| raw.to_string()), named_by, r)),
    }
}

/// Like [`required`], but an implicit path (`label` is `None`) may be absent.
fn optional(facts: &ImageFacts, path: &str, label: Option<&str>) -> Result<Option<String>, Diagnostic> {
    match (facts.files.get(path), label) {
        (None | Some(FileRead::Missing), None) => Ok(None),
        _ => required(facts, path, label).map(Some),
    }
}

/// Why a file named by a label (or a descriptor's `skill`) could not be used.
pub(crate) fn file_error(facts: &ImageFacts, path: &str, named_by: Option<&str>, read: &FileRead) -> Diagnostic {
    let r = &facts.reference;
    let by = named_by.map(|l| format!(" (named by {l})")).unwrap_or_default();
    let (code, what, help) = match read {
        FileRead::Text(_) => unreachable!("a text is not an error"),
        FileRead::Missing => (
            diags::FILE_MISSING,
            "is not in the image".to_string(),
            format!(
                "fix the label, or COPY the file into the image at {path}; `docker export $(docker create {r})` lists what {} holds",
                parent(path)
            ),
        ),
        FileRead::NotAFile => (diags::NOT_A_FILE, "is a directory (or another non-file)".to_string(), "name the file itself".to_string()),
        FileRead::Escape(t) => (
            diags::PATH_ESCAPE,
            format!("leads out of the image root (\"{t}\")"),
            "labels and descriptor paths must stay inside the image; use an absolute path such as /svc/descriptor.json".to_string(),
        ),
        FileRead::TooLarge(n) => (
            diags::TOO_LARGE,
            format!("is {n} bytes; the limit is {MAX_FILE_BYTES}"),
            "a descriptor, snapshot or skill this large is not configuration; check the label".to_string(),
        ),
        FileRead::NotUtf8(at) => {
            (diags::NOT_UTF8, format!("is not UTF-8 text (invalid byte at offset {at})"), "write the file as UTF-8".to_string())
        }
        FileRead::TooManyLinks => {
            (diags::PATH_ESCAPE, "is a chain of too many links".to_string(), "point the label at the file itself".to_string())
        }
    };
    Diagnostic::error(code, format!("image {r}: `{path}`{by} {what}")).help(help)
}

fn parent(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((p, _)) => p,
    }
}
