//! `x-claw.describe-file`: a descriptor file the pod names, relative to the pod directory.

use super::{DescriptorSource, OriginKind, Request, SourceResult, fs, read_required, with_build_root};

pub(crate) struct DescribeFile;

impl DescriptorSource for DescribeFile {
    fn describe(&self, req: &Request) -> SourceResult {
        let Some(file) = &req.service.describe_file else { return Ok(None) };
        let path = fs::normalize(&req.pod_dir.join(&file.value));
        Ok(read_required(req, &path, OriginKind::DescribeFile, "describe-file", Some(file.loc))?.map(|l| with_build_root(l, req)))
    }
}
