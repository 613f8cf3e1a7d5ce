//! The image as a descriptor source: the descriptor its `claw.describe` label names (or
//! `/.claw-describe.json`), and the MCP `tools/list` snapshot its `claw.tools` label names
//! (or `/.claw-tools.json`), converted to a descriptor. Only an implicit path may be
//! missing; a labelled one must be there. The files were read by [`crate::image::fetch`];
//! this only looks them up.

use super::{DescriptorSource, Loaded, OriginKind, Request, SkillRoot, SourceResult};
use crate::describe::snapshot;
use crate::diag::Diagnostic;
use crate::image::{FileRead, ImageFacts, ImageSet, MCP_PATH_LABEL, diags, image_path, layers::MAX_FILE_BYTES};
use std::sync::Arc;

pub struct Image(pub Arc<ImageSet>);

impl DescriptorSource for Image {
    fn describe(&self, req: &Request) -> SourceResult {
        let Some(reference) = &req.service.image else { return Ok(None) };
        let Some(facts) = self.0.found.get(&reference.value) else { return Ok(None) };
        let facts = Arc::new(facts.clone());
        let (dpath, dlabel) = facts.describe_path();
        let descriptor = text(&facts, &dpath, dlabel.then_some(crate::image::DESCRIBE_LABEL)).map_err(|d| vec![d.at(reference.loc)])?;
        let (tpath, tlabel) = facts.tools_path();
        let snapshot = text(&facts, &tpath, tlabel.then_some(crate::image::TOOLS_LABEL)).map_err(|d| vec![d.at(reference.loc)])?;
        let snapshot = match snapshot {
            Some(s) => Some(convert(req, &facts, &tpath, &s).map_err(|d| vec![d.at(reference.loc)])?),
            None => None,
        };
        let (name, text, snapshot) = match (descriptor, snapshot) {
            (None, None) => return Ok(None),
            (Some(d), s) => (facts.file_name(&dpath), d, s),
            (None, Some((name, text, warnings))) => {
                let skill_root = SkillRoot::Image(facts);
                return Ok(Some(Loaded { kind: OriginKind::Image, name, text, skill_root, warnings, snapshot: None }));
            }
        };
        let warnings = snapshot.as_ref().map(|s| s.2.clone()).unwrap_or_default();
        let snapshot = snapshot.map(|(n, t, _)| (n, t));
        Ok(Some(Loaded { kind: OriginKind::Image, name, text, skill_root: SkillRoot::Image(facts), warnings, snapshot }))
    }
}

/// The text of `path` in the image; `None` when an implicit path is absent.
fn text(facts: &ImageFacts, path: &str, label: Option<&str>) -> Result<Option<String>, Diagnostic> {
    match facts.files.get(path) {
        Some(FileRead::Text(t)) => Ok(Some(t.clone())),
        None | Some(FileRead::Missing) if label.is_none() => Ok(None),
        Some(r) => Err(file_error(facts, path, label, r)),
        None => Err(file_error(facts, path, label, &FileRead::Missing)),
    }
}

/// Why a file named by a label (or a descriptor's `skill`) could not be used.
pub fn file_error(facts: &ImageFacts, path: &str, named_by: Option<&str>, read: &FileRead) -> Diagnostic {
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

type Converted = (String, String, Vec<Diagnostic>);

/// A snapshot's text → (name, descriptor JSON text, warnings).
fn convert(req: &Request, facts: &ImageFacts, path: &str, text: &str) -> Result<Converted, Diagnostic> {
    let name = facts.file_name(path);
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        Diagnostic::error(diags::INVALID_SNAPSHOT, format!("`{name}` is not valid JSON: {e}"))
            .help("bake the JSON result of MCP tools/list, e.g. {\"tools\": [...]}")
    })?;
    let mcp_path = facts.label(MCP_PATH_LABEL).and_then(image_path).unwrap_or_else(|| "/mcp".to_string());
    let (descriptor, partial) = snapshot::to_descriptor(&req.service.name, &value, &mcp_path).map_err(|e| {
        Diagnostic::error(diags::INVALID_SNAPSHOT, format!("`{name}`: {}", e.0))
            .help("bake the JSON result of MCP tools/list, e.g. {\"tools\": [...]}")
    })?;
    let mut warnings = Vec::new();
    if partial {
        warnings.push(
            Diagnostic::warning(diags::PARTIAL_SNAPSHOT, format!("`{name}` has a nextCursor: it holds one page of tools/list"))
                .at_opt(req.service.image.as_ref().map(|i| i.loc))
                .help("bake every page (follow nextCursor until it is absent) so no tool is missing"),
        );
    }
    let text = serde_json::to_string_pretty(&descriptor).expect("JSON values serialize") + "\n";
    Ok((format!("{name} (as descriptor)"), text, warnings))
}
