//! `--descriptor SERVICE=PATH`: the operator's own file, first of all sources, read
//! from anywhere (trusted like the command line that names it).

use super::{DescriptorSource, OriginKind, Request, SourceResult, read_required, with_build_root};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub(crate) struct CommandLine(pub(crate) BTreeMap<String, PathBuf>);

impl DescriptorSource for CommandLine {
    fn describe(&self, req: &Request) -> SourceResult {
        let Some(path) = self.0.get(&req.service.name) else { return Ok(None) };
        Ok(read_required(req, path, OriginKind::CommandLine, "--descriptor file", None)?.map(|l| with_build_root(l, req)))
    }
}
