//! The arguments every command that reads a pod shares, the settings they lead to (with
//! `clawc.toml` and the `CLAWC_*` variables, see [`crate::config`]), and the compile.

use super::Format;
use crate::config::{self, Choice, Effective, Given};
use crate::diag::Diagnostic;
use crate::grant::SecretMode;
use crate::image::ImageSource;
use crate::image::cache::Cache;
use crate::sourcemap::SourceMap;
use crate::{Compiled, Options};
use clap::Args;
use std::path::{Path, PathBuf};

/// Options about where a pod's inputs come from (the pod path itself is each command's
/// own positional argument). None has a clap default: a flag left out falls through to
/// `CLAWC_IMAGES`, then `clawc.toml`, then the default the help names.
#[derive(Args, Debug, Clone)]
pub(super) struct PodArgs {
    /// Variables for ${VAR} placeholders and auth tokens [default: <pod dir>/.env; a missing default file is fine]
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
    /// Descriptor file for a service; wins over every other source (repeatable; relative to the current directory)
    #[arg(long, value_name = "SERVICE=PATH", value_parser = config::parse_descriptor)]
    pub descriptor: Vec<(String, PathBuf)>,
    /// The runner of an agent whose tools run natively, over its image's `claw.type` label or its Dockerfile (repeatable; see docs/runners.md)
    #[arg(long, value_name = "SERVICE=TYPE", value_parser = config::parse_runner)]
    pub runner: Vec<(String, String)>,
    /// Where service images are read from, tried in order (repeatable or comma-separated): `auto` (the Docker Engine when it answers), `docker` (it must answer; honours DOCKER_HOST), `oci:DIR` (an OCI image layout), `archive:TAR` (a `docker save` archive), `none` (read no image) [default: $CLAWC_IMAGES, else `images` in clawc.toml, else auto]
    #[arg(long, value_name = "SOURCE", value_delimiter = ',')]
    pub images: Vec<ImageSource>,
    /// Neither use nor fill the cache of files read out of images (kept by image ID under the user cache dir, or $CLAWC_CACHE_DIR), nor the stat record and render memo that let --check answer from the lock and a recompile skip unchanged files and agent services (so --check compiles), nor the descriptors kept decoded, the pod's tree kept parsed and report.json's index kept (every descriptor is decoded, the pod parsed whole, the index rendered); `--no-cache=false` overrides clawc.toml
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub no_cache: Option<bool>,
    /// Inputs must resolve inside this directory (symlinks followed) [default: the git work tree holding the pod, else the pod's directory]
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// How many images are inspected and read at once [default: 8]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub image_jobs: Option<u16>,
    /// Threads for the per-agent work: decoding descriptors (from 64 KiB of them), render keys, rendering, report.json, hashing and writing the tree (pods under 64 agents use one); with more than one, a compile that writes also reads the previous tree ahead on one of its own; the output is the same bytes whatever N is [default: the CPUs available, at most 8]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: Option<u16>,
    /// Read settings from this file instead of the nearest clawc.toml (docs/config.md)
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Read no clawc.toml: only flags, CLAWC_* variables and defaults
    #[arg(long)]
    pub no_config: bool,
}

/// `--strict`, for the commands that report warnings.
#[derive(Args, Debug, Clone)]
pub(super) struct StrictArg {
    /// Make every warning an error (exit 2, nothing written); the diagnostic keeps its code. `--strict=false` overrides clawc.toml
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub strict: Option<bool>,
}

/// The settings a command could not work out: what to print and the exit code.
pub(super) struct Refused {
    pub code: i32,
    pub diagnostics: Vec<Diagnostic>,
    pub sources: SourceMap,
}

impl Refused {
    pub(super) fn print(&self, format: Format) -> i32 {
        super::print_diagnostics(&self.diagnostics, &self.sources, format);
        self.code
    }
}

impl From<config::Failed> for Refused {
    fn from(f: config::Failed) -> Self {
        Refused { code: f.exit_code(), diagnostics: f.diagnostics, sources: f.sources }
    }
}

/// The process environment, as the settings read it.
pub(super) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl PodArgs {
    /// What the command line said, with `out` and `strict` when the command has them.
    pub(super) fn given(&self, out: Option<&PathBuf>, strict: Option<&StrictArg>) -> Given {
        Given {
            images: self.images.clone(),
            out: out.cloned(),
            env_file: self.env_file.clone(),
            descriptors: self.descriptor.clone(),
            runners: self.runner.clone(),
            root: self.root.clone(),
            no_cache: self.no_cache,
            image_jobs: self.image_jobs,
            jobs: self.jobs,
            strict: strict.and_then(|s| s.strict),
            choice: match (&self.config, self.no_config) {
                (Some(f), _) => Choice::File(f.clone()),
                (None, true) => Choice::Nothing,
                (None, false) => Choice::Discover,
            },
        }
    }

    /// The settings for `pod`, `clawc.toml` looked for from `start` (the pod's directory
    /// for the pod commands).
    pub(super) fn settings(&self, start: &Path, out: Option<&PathBuf>, strict: Option<&StrictArg>) -> Result<Effective, Refused> {
        Ok(config::load(&self.given(out, strict), start, &process_env)?)
    }

    /// Compile options for `pod`, `clawc.toml` looked for from `start` (`None`: the pod's
    /// directory).
    pub(super) fn options(&self, pod: &Path, start: Option<&Path>, secrets: SecretMode) -> Result<Options, Refused> {
        let start = start.map_or_else(|| crate::compile::pod_dir(pod), Path::to_path_buf);
        let settings = self.settings(&start, None, None)?;
        Ok(options(pod, &settings, secrets))
    }

    /// Compiles in memory (redacted) for the questions commands ask; prints diagnostics.
    pub(super) fn analyze(&self, pod: &Path, strict: &StrictArg, format: Format) -> Result<Compiled, i32> {
        let settings = self.settings(&crate::compile::pod_dir(pod), None, Some(strict)).map_err(|r| r.print(format))?;
        // The same compile, diagnostics and all, but the tree is dropped as it is made:
        // these commands ask questions of the analysis, never of the files.
        let (compiled, _) = crate::compile_into(&options(pod, &settings, SecretMode::Redact), &mut crate::output::sink::Discard);
        if compiled.analysis.is_none() || format == Format::Human {
            super::print_diagnostics(&compiled.diagnostics.0, &compiled.sources, format);
        }
        if compiled.analysis.is_none() {
            return Err(compiled.exit_code());
        }
        Ok(compiled)
    }
}

/// The compile options the settings make.
pub(super) fn options(pod: &Path, s: &Effective, secrets: SecretMode) -> Options {
    let images = if s.images.value == [ImageSource::None] { Vec::new() } else { s.images.value.clone() };
    Options {
        pod: pod.to_path_buf(),
        env_file: s.env_file.value.clone(),
        descriptors: s.descriptors.iter().map(|(k, v)| (k.clone(), v.value.clone())).collect(),
        secrets,
        // vars_os: `std::env::vars` panics on a variable that is not Unicode; such a
        // variable cannot be a placeholder's value anyway.
        process_env: std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect(),
        images,
        image_cache: if s.no_cache.value { Cache::default() } else { Cache::user() },
        image_jobs: s.image_jobs.value.into(),
        jobs: s.jobs,
        root: s.root.value.clone(),
        repository: None,
        runners: s.runners.iter().map(|(k, v)| (k.clone(), v.value.clone())).collect(),
        strict: s.strict.value,
        strict_by: Some(s.strict_by()),
        provenance: s.provenance(),
        lock_image_sources: None,
        check_records: if s.no_cache.value { None } else { crate::disk::user_cache_dir().map(|d| d.join("check").join("v1")) },
        describe_cache: if s.no_cache.value { None } else { crate::disk::user_cache_dir().map(|d| d.join("describe").join("v1")) },
        pod_cache: if s.no_cache.value { None } else { crate::disk::user_cache_dir().map(|d| d.join("pod").join("v1")) },
        kept: crate::Kept::default(),
    }
}
