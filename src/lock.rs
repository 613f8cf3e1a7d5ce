//! `clawc.lock`: what a compiled tree was made from and what it holds. Records clawc's
//! version, the SHA-256 of every input file (and the files probed and found missing),
//! the names of the environment variables the output depends on with one digest of
//! their values (never the values; token variables are named but not hashed), and the
//! SHA-256 of every output. `compile --check` replays it to answer from hashes alone.

use crate::describe::ServiceDescriptor;
use crate::digest::sha256_hex;
use crate::disk::{self, Contents};
use crate::grant::SecretMode;
use crate::pod::env::Env;
use crate::source::record::InputEntry;
use crate::sourcemap::SourceMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

pub(crate) const LOCK: &str = "clawc.lock";
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lock {
    pub version: u32,
    pub clawc: String,
    pub secrets: String,
    /// Whether images were read: `read`, or `none` (`--images none`).
    #[serde(default)]
    pub images: String,
    /// `--runner SERVICE=TYPE` overrides (they shape the output as inputs do).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub runners: BTreeMap<String, String>,
    pub inputs: Vec<LockInput>,
    pub env: LockEnv,
    pub outputs: Vec<LockOutput>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockInput {
    pub path: String,
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// `None`: the file was looked for and is absent (its appearance changes the output).
    pub sha256: Option<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockEnv {
    /// Variables whose values shape the output (x-claw placeholders).
    pub keys: Vec<String>,
    /// SHA-256 over `name=value` of `keys`.
    pub sha256: String,
    /// Variables that hold tokens: named so `--check` can look for leaked values.
    pub secret_keys: Vec<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockOutput {
    pub path: String,
    pub sha256: String,
}

fn mode_name(mode: SecretMode) -> &'static str {
    match mode {
        SecretMode::Redact => "redact",
        SecretMode::Inline => "inline",
    }
}

/// What the lock describes of a compile: its outputs (without the lock), the secrets
/// they may hold, and the services' descriptors.
pub(crate) struct Built<'a> {
    pub artifacts: &'a crate::artifact::ArtifactSet,
    pub secrets: &'a BTreeMap<String, String>,
    pub services: &'a BTreeMap<String, ServiceDescriptor>,
}

/// Builds the lock for `built.artifacts` (which do not hold the lock).
/// The compile settings a lock records besides its inputs: a tree is only in sync for the
/// same ones.
pub(crate) struct Settings {
    pub mode: SecretMode,
    /// `read` or `none`.
    pub images: String,
    pub runners: BTreeMap<String, String>,
}

pub(crate) fn build(inputs: &BTreeMap<String, InputEntry>, sources: &SourceMap, env: &Env, settings: &Settings, built: &Built) -> Vec<u8> {
    let described = built.services;
    let by_file: BTreeMap<&str, (&str, &ServiceDescriptor)> =
        described.iter().map(|(svc, d)| (sources.name(d.file), (svc.as_str(), d))).collect();
    let inputs = inputs
        .iter()
        .map(|(path, e)| {
            let d = by_file.get(path.as_str()).filter(|_| e.role == "descriptor" || e.role == "image");
            LockInput {
                path: path.clone(),
                role: e.role.to_string(),
                service: d.map(|(s, _)| s.to_string()),
                origin: d.map(|(_, d)| d.origin.as_str().to_string()),
                sha256: e.sha256.clone(),
            }
        })
        .collect();
    let keys = env.used();
    let lock = Lock {
        version: VERSION,
        clawc: env!("CARGO_PKG_VERSION").to_string(),
        secrets: mode_name(settings.mode).to_string(),
        images: settings.images.clone(),
        runners: settings.runners.clone(),
        inputs,
        env: LockEnv { sha256: env.digest(&keys), keys: keys.into_iter().collect(), secret_keys: env.secret_names().into_iter().collect() },
        outputs: built.artifacts.0.iter().map(|(p, a)| LockOutput { path: p.clone(), sha256: output_hash(a, built.secrets) }).collect(),
    };
    crate::artifact::json::to_go_json(&lock)
}

/// An output's hash; a file holding inline tokens is hashed with them masked, so the
/// lock (which may be committed) cannot confirm a guessed token offline.
fn output_hash(a: &crate::artifact::Artifact, secrets: &BTreeMap<String, String>) -> String {
    if a.secret { sha256_hex(&crate::secrets::mask(&a.bytes, secrets)) } else { sha256_hex(&a.bytes) }
}

/// What replaying a lock found.
pub(crate) enum Replay {
    /// Inputs, environment and outputs all match: the tree is in sync.
    InSync { outputs: BTreeMap<String, Vec<u8>>, secret_keys: Vec<String> },
    /// Something differs (or there is no usable lock): compile to find out what.
    Unknown,
}

/// Checks the lock in `out` against the inputs under `pod_dir` and `env`, by hashes only.
pub(crate) fn replay(out: &Path, pod_dir: &Path, root: &crate::source::fs::InputRoot, env: &Env, settings: &Settings) -> Replay {
    let mode = settings.mode;
    // A symlinked --out, an older clawc's manifest (a compile deletes it) or a killed
    // write's staging (a compile finishes it): only a compile can say what differs.
    let leftover =
        [crate::output::write::LEGACY_MANIFEST, crate::output::write::STAGE].iter().any(|f| out.join(f).symlink_metadata().is_ok());
    if disk::not_a_directory(out).is_some() || leftover {
        return Replay::Unknown;
    }
    let Ok(Contents::Bytes(text)) = disk::read(out, LOCK, disk::MAX_BOOKKEEPING) else { return Replay::Unknown };
    let Ok(lock) = serde_json::from_slice::<Lock>(&text) else { return Replay::Unknown };
    if lock.version != VERSION
        || lock.clawc != env!("CARGO_PKG_VERSION")
        || lock.secrets != mode_name(mode)
        || lock.images != settings.images
        || lock.runners != settings.runners
        || mode != SecretMode::Redact
    {
        return Replay::Unknown;
    }
    // Files read out of images cannot be re-hashed without reading the images again.
    if lock.inputs.iter().any(|i| i.role == "image") {
        return Replay::Unknown;
    }
    for input in &lock.inputs {
        // The lock is untrusted too: its paths are read as inputs are (confined, regular,
        // bounded); anything else means "compile and see".
        let path = crate::source::fs::normalize(&pod_dir.join(&input.path));
        let now = match crate::source::fs::read_text(Some(root), &path, &input.path) {
            Ok(text) => Some(sha256_hex(text.as_bytes())),
            Err(crate::source::fs::ReadError::Missing) => None,
            Err(_) => return Replay::Unknown,
        };
        if now != input.sha256 {
            return Replay::Unknown;
        }
    }
    let keys: BTreeSet<String> = lock.env.keys.iter().cloned().collect();
    if env.digest(&keys) != lock.env.sha256 {
        return Replay::Unknown;
    }
    let mut outputs = BTreeMap::new();
    let mut dirs = disk::Dirs::default();
    for o in &lock.outputs {
        if !disk::is_safe_relative(&o.path) {
            return Replay::Unknown;
        }
        match disk::read_in(out, &o.path, disk::MAX_OUTPUT, &mut dirs) {
            Ok(Contents::Bytes(bytes)) if sha256_hex(&bytes) == o.sha256 => {
                outputs.insert(o.path.clone(), bytes);
            }
            _ => return Replay::Unknown,
        }
    }
    Replay::InSync { outputs, secret_keys: lock.env.secret_keys }
}
