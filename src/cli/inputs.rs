//! The arguments every command that reads a pod shares, and the compile they lead to.

use crate::grant::SecretMode;
use crate::image::ImageSource;
use crate::image::cache::Cache;
use crate::{Compiled, Options};
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Options about where a pod's inputs come from (the pod path itself is each command's
/// own positional argument).
#[derive(Args, Debug, Clone)]
pub(super) struct PodArgs {
    /// Variables for ${VAR} placeholders and auth tokens [default: <pod dir>/.env; a missing default file is fine]
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
    /// Descriptor file for a service; wins over every other source (repeatable)
    #[arg(long, value_name = "SERVICE=PATH", value_parser = parse_descriptor)]
    pub descriptor: Vec<(String, PathBuf)>,
    /// The runner of an agent whose tools run natively, over its image's `claw.type` label or its Dockerfile (repeatable; see docs/runners.md)
    #[arg(long, value_name = "SERVICE=TYPE", value_parser = parse_runner)]
    pub runner: Vec<(String, String)>,
    /// Where service images are read from, tried in order (repeatable or comma-separated): `auto` (the Docker Engine when it answers), `docker` (it must answer; honours DOCKER_HOST), `oci:DIR` (an OCI image layout), `archive:TAR` (a `docker save` archive), `none` (read no image)
    #[arg(long, value_name = "SOURCE", default_value = "auto", env = "CLAWC_IMAGES", value_delimiter = ',')]
    pub images: Vec<ImageSource>,
    /// Neither use nor fill the cache of files read out of images (kept by image ID under the user cache dir, or $CLAWC_CACHE_DIR)
    #[arg(long)]
    pub no_cache: bool,
    /// Inputs must resolve inside this directory (symlinks followed) [default: the git work tree holding the pod, else the pod's directory]
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// How many images are inspected and read at once
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub image_jobs: u16,
}

fn parse_descriptor(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((svc, path)) if !svc.trim().is_empty() && !path.is_empty() => Ok((svc.trim().to_string(), PathBuf::from(path))),
        _ => Err("expected SERVICE=PATH, e.g. --descriptor trading-api=descriptors/trading-api.json".to_string()),
    }
}

fn parse_runner(s: &str) -> Result<(String, String), String> {
    let names = || crate::runner::Runner::names().collect::<Vec<_>>().join(", ");
    match s.split_once('=') {
        Some((svc, ty)) if !svc.trim().is_empty() => match crate::runner::Runner::parse(ty) {
            Some(r) => Ok((svc.trim().to_string(), r.name().to_string())),
            None => Err(format!(
                "\"{ty}\" is not a runner clawc knows; {} (one of: {})",
                crate::diag::suggest(ty, crate::runner::Runner::names(), "name one it knows"),
                names()
            )),
        },
        _ => Err(format!("expected SERVICE=TYPE, e.g. --runner coder=codex (TYPE one of: {})", names())),
    }
}

impl PodArgs {
    /// Compile options, or the exit code of a command-line error (already printed).
    pub(super) fn options(&self, pod: &std::path::Path, secrets: SecretMode) -> Result<Options, i32> {
        let mut descriptors = BTreeMap::new();
        for (svc, path) in &self.descriptor {
            if descriptors.insert(svc.clone(), path.clone()).is_some() {
                eprintln!("error: --descriptor given twice for service \"{svc}\"");
                return Err(2);
            }
        }
        let mut runners = BTreeMap::new();
        for (svc, ty) in &self.runner {
            if runners.insert(svc.clone(), ty.clone()).is_some() {
                eprintln!("error: --runner given twice for service \"{svc}\"");
                return Err(2);
            }
        }
        if self.images.len() > 1 && self.images.contains(&ImageSource::None) {
            eprintln!("error: --images none cannot be combined with other image sources");
            return Err(2);
        }
        let images = if self.images == [ImageSource::None] { Vec::new() } else { self.images.clone() };
        Ok(Options {
            pod: pod.to_path_buf(),
            env_file: self.env_file.clone(),
            descriptors,
            secrets,
            process_env: std::env::vars().collect(),
            images,
            image_cache: if self.no_cache { Cache::default() } else { Cache::user() },
            image_jobs: self.image_jobs.into(),
            root: self.root.clone(),
            runners,
        })
    }

    /// Compiles in memory (redacted) for the questions commands ask; prints diagnostics.
    pub(super) fn analyze(&self, pod: &std::path::Path, format: super::Format) -> Result<Compiled, i32> {
        let compiled = crate::compile(&self.options(pod, SecretMode::Redact)?);
        if compiled.analysis.is_none() || format == super::Format::Human {
            super::print_diagnostics(&compiled.diagnostics.0, &compiled.sources, format);
        }
        if compiled.analysis.is_none() {
            return Err(compiled.exit_code());
        }
        Ok(compiled)
    }
}
