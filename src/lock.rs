//! `clawc.lock`: what a compiled tree was made from and what it holds. Records clawc's
//! version, the SHA-256 of every input file (and the files probed and found missing),
//! the names of the environment variables the output depends on with one digest of
//! their values (never the values; token variables are named but not hashed), and the
//! SHA-256 of every output. `compile --check` replays it to answer from hashes alone.
//!
//! It also records the settings that shape the output: the secrets mode, whether images
//! were read and from which sources, and the `--runner` and `--descriptor` overrides.
//! `--check` reads the image sources from it when no flag, variable or `clawc.toml`
//! names any, so a tree is checked the way it was compiled.

use crate::describe::ServiceDescriptor;
use crate::digest::sha256_hex;
use crate::disk;
use crate::grant::SecretMode;
use crate::output::record::Stamps;
use crate::pod::env::Env;
use crate::source::record::InputEntry;
use crate::sourcemap::SourceMap;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

pub(crate) const LOCK: &str = "clawc.lock";

const VERSION: u32 = 1;

/// The roles of the inputs the registry is made from, as the describe stage reads them
/// (see [`described_digest`]).
const DESCRIBED: [&str; 2] = ["descriptor", "snapshot"];

/// A digest of the descriptor and snapshot files among `inputs` (path, role, SHA-256 in
/// hex, `None` for a file looked for and absent), whatever their order. Every agent
/// service's render key digests the whole registry, which is made from these files: when
/// two compiles' digests differ, next to no service's files can be taken from the
/// other's tree, and the read-ahead stops looking at them (`output::ahead`).
pub(crate) fn described_digest<'a>(inputs: impl IntoIterator<Item = (&'a str, &'a str, Option<&'a str>)>) -> [u8; 32] {
    let mut described: Vec<_> = inputs.into_iter().filter(|(_, role, _)| DESCRIBED.contains(role)).collect();
    described.sort_unstable();
    // As JSON, so no two lists digest alike.
    crate::digest::sha256(&serde_json::to_vec(&described).expect("strings serialize"))
}

/// The lock file. `O` is its outputs: read into [`LockOutput`]s, written from the
/// compile's own table ([`Written`]) without a copy of every path and hash.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lock<O = Vec<LockOutput>> {
    pub version: u32,
    pub clawc: String,
    pub secrets: String,
    /// Whether images were read: `read`, or `none` (`--images none`).
    #[serde(default)]
    pub images: String,
    /// The image sources, in order (`oci:`/`archive:` paths relative to the pod
    /// directory); absent when no image was read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_sources: Vec<String>,
    /// `--descriptor SERVICE=PATH` overrides (paths relative to the pod directory).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub descriptors: BTreeMap<String, String>,
    /// `--runner SERVICE=TYPE` overrides (they shape the output as inputs do).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub runners: BTreeMap<String, String>,
    pub inputs: Vec<LockInput>,
    pub env: LockEnv,
    pub outputs: O,
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

impl<O> Lock<O> {
    /// The same lock with other outputs.
    fn with_outputs<P>(&self, outputs: P) -> Lock<P> {
        Lock {
            version: self.version,
            clawc: self.clawc.clone(),
            secrets: self.secrets.clone(),
            images: self.images.clone(),
            image_sources: self.image_sources.clone(),
            descriptors: self.descriptors.clone(),
            runners: self.runners.clone(),
            inputs: self.inputs.clone(),
            env: self.env.clone(),
            outputs,
        }
    }
}

/// A compile's outputs with their hashes, in path order, each path once: a list sorted
/// once, not a map grown one path at a time (at 30,000 agent ids it holds 90,000 paths).
/// A path is shared with the render memo (a file taken from the tree comes with the
/// stored memo's string): one copy of it, not two. Past a
/// budget ([`Listing`]) the list is on disk but for its newest part, as sorted runs
/// ([`crate::runs`]), and read back merged.
pub(crate) struct Listed<const N: usize = 32> {
    /// The outputs put last, sorted.
    held: Vec<(Arc<str>, [u8; N])>,
    /// Those put before, when they went to disk.
    runs: Option<crate::runs::Runs<N>>,
}

/// The list of outputs as a compile puts them ([`Listing::push`]), held until it is
/// `budget` bytes, then sorted and written out as a run, and held again from empty.
pub(crate) struct Listing<const N: usize = 32> {
    held: Vec<(Arc<str>, [u8; N])>,
    /// What `held` takes, about: each entry and its path.
    bytes: usize,
    budget: usize,
    runs: Option<crate::runs::Runs<N>>,
}

/// What an entry of a [`Listing`] takes besides its path's bytes: its place in the list
/// and the shared path's counts.
const ENTRY: usize = std::mem::size_of::<(Arc<str>, [u8; 32])>() + 2 * std::mem::size_of::<usize>();

/// A [`Listing`]'s budget when nothing says otherwise: 1 MiB, about 12,000 outputs (4,000
/// agent ids), so a pod below that never touches the disk for it.
pub(crate) const HELD: usize = 1 << 20;

impl<const N: usize> Listing<N> {
    /// A list held up to `budget` bytes (`usize::MAX`: all of it).
    pub(crate) fn new(budget: usize) -> Listing<N> {
        Listing { held: Vec::new(), bytes: 0, budget, runs: None }
    }

    /// A list held up to `budget` bytes whose first run, `sorted` (in path order, each
    /// path once), is written into `file` now: a list held elsewhere goes to disk without
    /// being held twice.
    pub(crate) fn with_run<P: AsRef<str>>(
        budget: usize,
        file: std::fs::File,
        sorted: impl IntoIterator<Item = (P, [u8; N])>,
    ) -> std::io::Result<Listing<N>> {
        let mut runs = crate::runs::Runs::<N>::new(file);
        runs.push_indexed(sorted.into_iter().map(Ok), usize::MAX)?;
        Ok(Listing { held: Vec::new(), bytes: 0, budget, runs: Some(runs) })
    }

    /// Whether the list holds its budget: the next entry is put after a [`Listing::spill`].
    fn is_full(&self) -> bool {
        self.bytes >= self.budget
    }

    /// Room for `total` entries in all without growing by doubling, as far as the budget
    /// goes.
    pub(crate) fn reserve(&mut self, total: usize) {
        let room = self.budget.saturating_sub(self.bytes) / ENTRY;
        self.held.reserve_exact(total.saturating_sub(self.held.len()).min(room));
    }

    /// Lists `path` with `digest`. When the list holds its budget, what it holds is first
    /// written out as a sorted run, into the file `file` makes the first time (an error
    /// from writing it is made `E` by `io`); then nothing is listed.
    pub(crate) fn put<E>(
        &mut self,
        path: Arc<str>,
        digest: [u8; N],
        file: impl FnOnce() -> Result<std::fs::File, E>,
        io: impl FnOnce(std::io::Error) -> E,
    ) -> Result<(), E> {
        if self.is_full() {
            let file = if self.runs.is_none() { Some(file()?) } else { None };
            self.spill(file).map_err(io)?;
        }
        self.push(path, digest);
        Ok(())
    }

    pub(crate) fn push(&mut self, path: Arc<str>, digest: [u8; N]) {
        self.bytes += ENTRY + path.len();
        self.held.push((path, digest));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty() && self.runs.is_none()
    }

    /// Writes what it holds as a sorted run into the file it was handed, or `file` the first
    /// time, and holds nothing.
    fn spill(&mut self, file: Option<std::fs::File>) -> std::io::Result<()> {
        let runs = match (&mut self.runs, file) {
            (Some(r), _) => r,
            (None, Some(f)) => self.runs.insert(crate::runs::Runs::<N>::new(f)),
            (None, None) => return Err(std::io::Error::other("no file for the list's runs")),
        };
        sort_once(&mut self.held);
        runs.push(self.held.iter().map(|(p, d)| (&**p, d)))?;
        self.held.clear();
        self.bytes = 0;
        Ok(())
    }

    /// The list in path order; of a path put twice, the payload put last.
    pub(crate) fn finish(mut self) -> Listed<N> {
        sort_once(&mut self.held);
        Listed { held: self.held, runs: self.runs }
    }
}

/// `outputs` put in path order; of a path put twice, the payload put last.
fn sort_once<const N: usize>(outputs: &mut Vec<(Arc<str>, [u8; N])>) {
    // Sorted through their positions, then moved into place: a stable sort of the list
    // itself takes scratch as big as the list (4.5 MB at 30,000 agent ids, at the
    // compile's peak), the positions a sixth of it. Of two equal paths, the one put
    // later sorts later, and is the one kept (moved into the earlier one's place).
    let mut order: Vec<usize> = (0..outputs.len()).collect();
    order.sort_unstable_by(|&a, &b| outputs[a].0.cmp(&outputs[b].0).then(a.cmp(&b)));
    permute(outputs, order);
    outputs.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            std::mem::swap(later, kept);
        }
        same
    });
}

/// A lock's output paths in its order, as a stat record stamps them: the lock's own list
/// (not copied: at 30,000 agent ids a list of the 90,000 paths took 2.2 MB at the peak),
/// or read back from its bytes.
pub(crate) enum RecordedPaths<'a> {
    Listed(&'a Listed),
    Read(Vec<Cow<'a, str>>),
}

impl std::fmt::Debug for RecordedPaths<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter().map(|p| p.map_or_else(|e| e.to_string(), Cow::into_owned))).finish()
    }
}

impl RecordedPaths<'_> {
    /// The paths in the lock's order, or an error reading them back from disk.
    pub(crate) fn iter(&self) -> impl Iterator<Item = std::io::Result<Cow<'_, str>>> {
        let (listed, read) = match self {
            RecordedPaths::Listed(l) => (Some(l.iter().map(|e| e.map(|(p, _)| p))), None),
            RecordedPaths::Read(r) => (None, Some(r.iter().map(|p| Ok(Cow::Borrowed(&**p))))),
        };
        listed.into_iter().flatten().chain(read.into_iter().flatten())
    }

    #[cfg(test)]
    fn to_vec(&self) -> Vec<String> {
        self.iter().map(|p| p.unwrap().into_owned()).collect()
    }
}

impl<const N: usize> Default for Listed<N> {
    fn default() -> Self {
        Listed { held: Vec::new(), runs: None }
    }
}

impl<const N: usize> Listed<N> {
    /// `outputs` put in path order; of a path put twice, the payload put last.
    #[cfg(test)]
    pub(crate) fn sorted(mut outputs: Vec<(Arc<str>, [u8; N])>) -> Listed<N> {
        sort_once(&mut outputs);
        Listed { held: outputs, runs: None }
    }

    /// Each output in path order, or the first error reading the list back from disk.
    pub(crate) fn iter(&self) -> impl Iterator<Item = std::io::Result<(Cow<'_, str>, [u8; N])>> {
        let (held, merged) = match &self.runs {
            None => (Some(self.held.iter().map(|(p, d)| Ok((Cow::Borrowed(&**p), *d)))), None),
            Some(runs) => (None, Some(runs.merged(&self.held))),
        };
        held.into_iter().flatten().chain(merged.into_iter().flatten())
    }

    /// How many sorted runs of it are on disk.
    pub(crate) fn runs(&self) -> usize {
        self.runs.as_ref().map_or(0, crate::runs::Runs::<N>::len)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty() && self.runs() == 0
    }
}

/// Moves `items[order[k]]` to position `k`, for every `k`, in place (`order` is a
/// permutation of the positions): each cycle of the permutation is followed once, and
/// each position is marked done by pointing at itself.
fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    for start in 0..items.len() {
        let mut at = start;
        while order[at] != at {
            let from = std::mem::replace(&mut order[at], at);
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

/// A compile's outputs written as the lock's `outputs`: the same text as [`LockOutput`]s.
pub(crate) struct Written<'a>(&'a Listed);

impl Serialize for Written<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        struct Output<'a>(&'a str, &'a [u8; 32]);
        impl Serialize for Output<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeStruct;
                // Hex on the stack: no allocation per output, twice per compile.
                let mut hex = [0; 64];
                let hex = crate::digest::hex_into(self.1, &mut hex);
                let mut o = s.serialize_struct("Output", 2)?;
                o.serialize_field("path", self.0)?;
                o.serialize_field("sha256", hex)?;
                o.end()
            }
        }
        let mut seq = s.serialize_seq(None)?;
        for entry in self.0.iter() {
            let (path, digest) = entry.map_err(S::Error::custom)?;
            seq.serialize_element(&Output(&path, &digest))?;
        }
        seq.end()
    }
}

pub(crate) fn mode_name(mode: SecretMode) -> &'static str {
    match mode {
        SecretMode::Redact => "redact",
        SecretMode::Inline => "inline",
    }
}

/// What the lock describes of a compile: its outputs (without the lock) with their hashes
/// (see [`output_hash`]), and the services' descriptors.
pub(crate) struct Built<'a> {
    pub outputs: Listed,
    pub services: &'a BTreeMap<String, ServiceDescriptor>,
}

/// The compile settings a lock records besides its inputs: a tree is only in sync for the
/// same ones.
pub(crate) struct Settings {
    pub mode: SecretMode,
    /// `read` or `none`.
    pub images: String,
    /// Recorded, not compared: the same images from another source are the same inputs.
    pub image_sources: Vec<String>,
    pub runners: BTreeMap<String, String>,
    pub descriptors: BTreeMap<String, String>,
}

/// Builds the lock for `built.outputs` (which do not hold the lock), to be written.
pub(crate) fn build(inputs: &BTreeMap<String, InputEntry>, sources: &SourceMap, env: &Env, settings: &Settings, built: Built) -> Pending {
    let described = built.services;
    let by_file: BTreeMap<&str, (&str, &ServiceDescriptor)> =
        described.iter().map(|(svc, d)| (sources.name(d.file), (svc.as_str(), d))).collect();
    let stamps = inputs.values().map(|e| e.stamp).collect();
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
        image_sources: if settings.images == "none" { Vec::new() } else { settings.image_sources.clone() },
        descriptors: settings.descriptors.clone(),
        runners: settings.runners.clone(),
        inputs,
        env: LockEnv { sha256: env.digest(&keys), keys: keys.into_iter().collect(), secret_keys: env.secret_names().into_iter().collect() },
        outputs: Written(&Listed::default()),
    };
    Pending { stamps, ..Pending::of(&lock, built.outputs) }
}

/// A new lock, its bytes made as they are written ([`Pending::write_to`]) rather than held:
/// at 30,000 agent ids they are 14 MB, the largest block a recompile held at its peak.
/// Its outputs, nearly all of it, are the same lines but for a path and a hash, so they
/// are written here rather than through serde, which took five times as long; the rest
/// (a few KB) is rendered by serde with no outputs, and the outputs go in place of its
/// `[]`. A unit test holds this to serde's rendering of the whole lock, which is also
/// what a lock gets whose rest does not end as expected.
pub struct Pending {
    form: Form,
    /// Its digest (the binding digest of its bytes: `record::lock_digest`), made when first
    /// asked for by writing it once into the hash, or as it is written
    /// ([`Pending::write_hashing`]).
    digest: std::sync::OnceLock<[u8; 32]>,
    /// Its inputs' stamps as the compile read them, in its order, where they are known
    /// (`InputEntry::stamp`): the stat record written beside it holds them.
    stamps: Vec<Option<crate::disk::Stamp>>,
}

enum Form {
    /// Everything before the outputs' `[`, and the outputs; how many inputs it lists, and
    /// whether it is redacted (what a stat record needs).
    Listed { rest: Vec<u8>, outputs: Listed, inputs: usize, redacted: bool },
    /// Rendered whole: by serde (there are no outputs, or the rest did not end as
    /// expected), or handed over as bytes ([`Pending::whole`]).
    Whole(Arc<[u8]>),
}

/// The buffer a lock is written through: its outputs go in small pieces (five a path).
const BUFFER: usize = 256 * 1024;

// As serde_json's pretty printer writes an array of objects one level in.
const NONE: &[u8] = b"[]\n}\n";
const OPEN: &[u8] = b"[\n";
const BETWEEN: &[u8] = b",\n";
const CLOSE: &[u8] = b"\n  ]\n}\n";
const PATH: &[u8] = b"    {\n      \"path\": ";
const HASH: &[u8] = b",\n      \"sha256\": \"";
const END: &[u8] = b"\"\n    }";

impl Pending {
    /// `lock` (whose outputs are none) with `outputs`.
    fn of(lock: &Lock<Written<'_>>, outputs: Listed) -> Pending {
        let rest = crate::artifact::json::to_go_json(lock);
        let form = match rest.strip_suffix(NONE) {
            Some(r) if !outputs.is_empty() => Form::Listed {
                rest: r.to_vec(),
                outputs,
                inputs: lock.inputs.len(),
                redacted: lock.secrets == mode_name(SecretMode::Redact),
            },
            _ => Form::Whole(crate::artifact::json::to_go_json(&lock.with_outputs(Written(&outputs))).into()),
        };
        Pending { form, digest: std::sync::OnceLock::new(), stamps: Vec::new() }
    }

    /// A lock rendered already (`bytes`).
    pub(crate) fn whole(bytes: Arc<[u8]>) -> Pending {
        Pending { digest: crate::output::record::lock_digest(&bytes).into(), form: Form::Whole(bytes), stamps: Vec::new() }
    }

    /// Its inputs' stamps as the compile read them, in its order (none for a lock handed
    /// over as bytes).
    pub(crate) fn input_stamps(&self) -> &[Option<crate::disk::Stamp>] {
        &self.stamps
    }

    /// The digest that binds the stat record and the render memo to its bytes
    /// ([`crate::output::record::lock_digest`]).
    pub(crate) fn digest(&self) -> [u8; 32] {
        *self.digest.get_or_init(|| self.hashed())
    }

    /// [`Pending::write_to`] through a buffer of its own, taking its digest from the bytes
    /// as they go (when it has none yet): a lock known to be new is made once, not once
    /// for its digest and once for its file (about 2.5 ms at 3,000 agent ids).
    pub(crate) fn write_hashing(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        use std::io::Write;
        if self.digest.get().is_some() {
            let mut w = std::io::BufWriter::with_capacity(BUFFER, w);
            self.write_to(&mut w)?;
            return w.flush();
        }
        let digest = self.through_hash(w)?;
        let _ = self.digest.set(digest);
        Ok(())
    }

    /// Writes its bytes into `w` and into a hash at once, a buffer at a time (the outputs go
    /// in small pieces, and each update of the hash costs more than a copy): its digest.
    fn through_hash(&self, w: &mut impl std::io::Write) -> std::io::Result<[u8; 32]> {
        let mut tee = std::io::BufWriter::with_capacity(BUFFER, crate::output::record::lock_hashing(w));
        self.write_to(&mut tee)?;
        Ok(tee.into_inner().map_err(std::io::IntoInnerError::into_error)?.finish().0)
    }

    /// How many bytes it is (`u64::MAX` when its outputs cannot be read back from disk:
    /// no file is that long).
    pub(crate) fn len(&self) -> u64 {
        match &self.form {
            Form::Whole(b) => b.len() as u64,
            Form::Listed { rest, outputs, .. } => {
                let entry = PATH.len() + HASH.len() + 64 + END.len();
                let mut n = 0;
                let mut bytes = 0;
                for e in outputs.iter() {
                    let Ok((p, _)) = e else { return u64::MAX };
                    n += 1;
                    bytes += entry + crate::artifact::json::go_json_str_len(&p);
                }
                (rest.len() + OPEN.len() + bytes + (n - 1) * BETWEEN.len() + CLOSE.len()) as u64
            }
        }
    }

    /// Writes its bytes into `w` (which should buffer: the outputs go in small pieces).
    pub(crate) fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let (rest, outputs) = match &self.form {
            Form::Whole(b) => return w.write_all(b),
            Form::Listed { rest, outputs, .. } => (rest, outputs),
        };
        let mut hex = [0; 64];
        w.write_all(rest)?;
        w.write_all(OPEN)?;
        for (n, entry) in outputs.iter().enumerate() {
            let (path, digest) = entry?;
            if n > 0 {
                w.write_all(BETWEEN)?;
            }
            w.write_all(PATH)?;
            crate::artifact::json::write_go_json_str(&mut *w, &path)?;
            w.write_all(HASH)?;
            w.write_all(crate::digest::hex_into(&digest, &mut hex).as_bytes())?;
            w.write_all(END)?;
        }
        w.write_all(CLOSE)
    }

    /// Its bytes, in one allocation of their length (for a sink that holds the tree).
    pub(crate) fn bytes(&self) -> Arc<[u8]> {
        if let Form::Whole(b) = &self.form {
            return b.clone();
        }
        let len = usize::try_from(self.len()).ok().filter(|&n| n != usize::MAX);
        if let Some(len) = len {
            let mut shared: Arc<[u8]> = std::iter::repeat_n(0, len).collect();
            let filled = Arc::get_mut(&mut shared).is_some_and(|mut w| self.write_to(&mut w).is_ok() && w.is_empty());
            if filled {
                return shared;
            }
        }
        let mut grown = Vec::new();
        let _ = self.write_to(&mut grown);
        grown.into()
    }

    /// What a stat record stamps of a redacted lock: how many inputs it lists, and its
    /// outputs' paths in order. `None` for a lock with inline tokens (never recorded) or
    /// whose bytes cannot be read back.
    pub(crate) fn recorded(&self) -> Option<(usize, RecordedPaths<'_>)> {
        match &self.form {
            Form::Listed { outputs, inputs, redacted, .. } => redacted.then_some((*inputs, RecordedPaths::Listed(outputs))),
            Form::Whole(b) => {
                use crate::output::known::LockView;
                let l = serde_json::from_slice::<LockView<'_>>(b).ok().filter(LockView::redacted)?;
                Some((l.inputs.len(), RecordedPaths::Read(l.outputs.into_iter().map(|o| o.path).collect())))
            }
        }
    }

    /// Its digest, by writing it through the binding digest; all zeros, the digest of no
    /// lock, when its outputs cannot be read back from disk (writing it then fails and
    /// says why).
    fn hashed(&self) -> [u8; 32] {
        self.through_hash(&mut std::io::sink()).unwrap_or([0; 32])
    }
}

/// An output's hash; a file holding inline tokens is hashed with them masked, so the
/// lock (which may be committed) cannot confirm a guessed token offline.
pub(crate) fn output_hash(a: &crate::artifact::Artifact, secrets: &BTreeMap<String, String>) -> String {
    hex::encode(output_digest(a, secrets))
}

/// [`output_hash`] as its 32 bytes.
pub(crate) fn output_digest(a: &crate::artifact::Artifact, secrets: &BTreeMap<String, String>) -> [u8; 32] {
    if a.secret { crate::digest::sha256(&crate::secrets::mask(&a.bytes, secrets)) } else { crate::digest::sha256(&a.bytes) }
}

/// What replaying a lock found.
pub(crate) enum Replay {
    /// Inputs, environment and outputs all match: the tree is in sync. `outputs` holds the
    /// bytes of the outputs that were read for the caller: every one when a token value is
    /// set (the committed-token scan reads them all), else those it asked for. `rehashed`
    /// counts the files (inputs and outputs) that were read and hashed because the stat
    /// record did not vouch for them; `listed`, the outputs the lock lists.
    InSync { outputs: BTreeMap<String, Vec<u8>>, secret_keys: Vec<String>, rehashed: usize, listed: usize },
    /// Something differs (or there is no usable lock): compile to find out what.
    Unknown,
}

/// How many outputs a thread of a replay claims at a time: about a third of a millisecond
/// of `lstat`s, so the threads finish within that of each other.
const OUTPUTS_PER_BLOCK: usize = 128;

/// Which outputs the caller of a replay needs the bytes of.
#[derive(Default)]
pub(crate) struct ReplayWith<'a> {
    /// Outputs whose bytes the caller reads (`report.json` under `--strict`).
    pub want: &'a [&'a str],
    /// The permission bits every output must have, or the tree is not in sync: a compile
    /// restores a file's mode. `None` for `--check`, which compares contents.
    pub mode: Option<u32>,
    /// With a token value set, every output is read for the committed-token scan: given a
    /// finder, the replay looks in each file as it reads it instead of holding them all for
    /// the caller, and a token found ends it as not in sync.
    pub tokens: Option<&'a crate::secrets::Finder>,
    /// Look at every input before any output, rather than at both at once: a compile is
    /// mostly run after an input changed, which ends the replay at once; a check mostly
    /// finds everything in sync, and is answered sooner looking at both together.
    pub inputs_first: bool,
}

/// Checks `committed`, the lock in `out` ([`committed`]), against the inputs under
/// `pod_dir` and `env`, by hashes, when a stat record (see [`crate::output::record`]) is
/// bound to it (else [`Replay::Unknown`]); a file the record vouches for is not read
/// again. When every file is in sync, the record is rewritten if anything had to be read,
/// the lock included.
pub(crate) fn replay(
    committed: Committed,
    out: &Path,
    pod_dir: &Path,
    root: &crate::source::fs::InputRoot,
    env: &Env,
    settings: &Settings,
    with: &ReplayWith,
) -> Replay {
    use crate::output::record::{self, Record};
    let mode = settings.mode;
    // A symlinked --out, an older clawc's manifest (a compile deletes it) or a killed
    // write's staging (a compile finishes it): only a compile can say what differs.
    let leftover =
        [crate::output::write::LEGACY_MANIFEST, crate::output::write::STAGE].iter().any(|f| out.join(f).symlink_metadata().is_ok());
    if disk::not_a_directory(out).is_some() || leftover {
        return Replay::Unknown;
    }
    let Committed { lock, digest, time, at, stamp, copied, restamp, previous, .. } = committed;
    // The lock's output hashes are only a claim: whoever wrote the committed tree could
    // write a lock whose hashes match outputs a compile would never make. A compile on
    // this machine binding its stat record to these very bytes is what makes them the
    // compile's own; without that record only a compile can say the tree is in sync.
    if previous.is_none() {
        return Replay::Unknown;
    }
    if lock.version != VERSION
        || lock.clawc != env!("CARGO_PKG_VERSION")
        || lock.secrets != mode_name(mode)
        || lock.images != settings.images
        || lock.runners != settings.runners
        || lock.descriptors != settings.descriptors
        || mode != SecretMode::Redact
    {
        return Replay::Unknown;
    }
    // Files read out of images cannot be re-hashed without reading the images again.
    // Nor can a skill folder's listing be vouched for by its files' hashes: a file added
    // to it changes the output.
    if lock.inputs.iter().any(|i| i.role == "image" || i.role == crate::skill::operator::FOLDER_ROLE) {
        return Replay::Unknown;
    }
    let inputs = || inputs_in_sync(&lock.inputs, pod_dir, root, previous.as_ref());
    let mut looked = None;
    if with.inputs_first {
        let Some(found) = inputs() else { return Replay::Unknown };
        looked = Some(found);
    }
    // The outputs, from the lock or the record's copy of it.
    let kept = previous.as_ref().and_then(crate::output::record::Record::copy).filter(|_| copied);
    let Some(listed) = (match kept {
        Some(c) => copied_outputs(c),
        None => Some(lock.outputs.iter().map(|o| Out { path: &o.path, sha256: Sha::Hex(&o.sha256) }).collect()),
    }) else {
        return Replay::Unknown;
    };
    let (n_in, n_out) = (lock.inputs.len(), listed.len());
    if previous.as_ref().is_some_and(|r| !r.is_for(&digest, n_in, n_out)) {
        return Replay::Unknown;
    }
    let keys: BTreeSet<String> = lock.env.keys.iter().cloned().collect();
    if env.digest(&keys) != lock.env.sha256 {
        return Replay::Unknown;
    }
    let parents = disk::parents_of_directories(listed.iter().map(|o| o.path));
    let Ok(walk) = disk::Walk::new(out) else { return Replay::Unknown };
    let (dirs, trusted) = record::trusted_directories(&walk, &parents, previous.as_ref());
    let restamped = trusted.len() < parents.len();
    // With a token value set, the caller scans every committed output for it.
    let scan = lock.env.secret_keys.iter().any(|k| env.get(k).is_some_and(|v| !v.is_empty()));
    // Thousands of outputs are looked at on every core, in blocks each thread claims as it
    // is free; this thread looks at the inputs first, then joins them. An input or output
    // that differs stops them all. A thread per core besides this one: with one fewer, the
    // spawned threads shared a core with this one for milliseconds while the other idled
    // (2 ms more of the 3,000-agent check's 28).
    let threads = if n_out < crate::jobs::PARALLEL_MIN_FILES { 1 } else { crate::jobs::cores().min(4) + 1 };
    let stop = std::sync::atomic::AtomicBool::new(false);
    let walk = || disk::Walk::new(out).ok().map(|w| w.trusting(trusted.clone()));
    let look = |walk: &mut Option<disk::Walk>, first: usize, block: &[Out]| {
        stopping(&stop, walk.as_mut().and_then(|w| outputs_in_sync(w, block, first, previous.as_ref(), scan, with, &stop)))
    };
    let inputs = || stopping(&stop, looked.or_else(inputs));
    let (inputs, seen) = crate::jobs::claim_blocks(&listed, OUTPUTS_PER_BLOCK, threads, walk, look, inputs);
    let Some((mut rehashed, inputs)) = inputs else { return Replay::Unknown };
    let mut parts = Vec::with_capacity(seen.len());
    let mut outputs = BTreeMap::new();
    for part in seen {
        let Some(part) = part else { return Replay::Unknown };
        rehashed += part.rehashed;
        outputs.extend(part.bytes);
        parts.push(part.stamps);
    }
    // Anything read, or a directory stamped anew (a file added beside the outputs), makes
    // a record the next check can use without reading it again. Otherwise none is made:
    // the one there already says all this one would.
    if let Some(at) = at
        && (rehashed > 0 || !copied || restamp || restamped)
    {
        let mut next = Record::new(digest, time, n_in, n_out, parents.len());
        for (i, stamp) in inputs.into_iter().enumerate() {
            next.set_input(i, stamp);
        }
        for (i, stamp) in parts.into_iter().flatten().enumerate() {
            next.set_output(i, stamp);
        }
        for (i, stamp) in dirs.into_iter().enumerate() {
            next.set_dir(i, stamp);
        }
        let head = Lock { outputs: Vec::new(), ..lock };
        if let Some(c) = copy(&head, &listed) {
            next.set_copy(stamp, &c);
        }
        record::store(&at, &next);
        return Replay::InSync { outputs, secret_keys: head.env.secret_keys, rehashed, listed: n_out };
    }
    Replay::InSync { outputs, secret_keys: lock.env.secret_keys, rehashed, listed: n_out }
}

/// `seen`, having set `stop` if it is `None`: what is not in sync stops the other threads
/// of a replay.
fn stopping<T>(stop: &std::sync::atomic::AtomicBool, seen: Option<T>) -> Option<T> {
    if seen.is_none() {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    seen
}

/// Whether the lock's `inputs` under `pod_dir` have the recorded hashes (an absent one
/// recorded as absent): the number read and hashed, and each one's stamp for the next
/// record, or `None` at the first that differs. One `previous` vouches for is not read.
fn inputs_in_sync(
    inputs: &[LockInput],
    pod_dir: &Path,
    root: &crate::source::fs::InputRoot,
    previous: Option<&crate::output::record::Record>,
) -> Option<(usize, Vec<Option<crate::output::record::Stamp>>)> {
    use crate::output::record::Stamp;
    use crate::source::fs::{ReadError, Seen};
    let mut rehashed = 0;
    let mut stamps = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        // The lock is untrusted too: its paths are read as inputs are (confined, regular,
        // bounded); anything else means "compile and see". A vouched input is still
        // resolved inside the root first.
        let path = crate::source::fs::normalize(&pod_dir.join(&input.path));
        let expected = input.sha256.is_some();
        let vouched = |m: &std::fs::Metadata| expected && previous.is_some_and(|r| r.vouches_input(i, &Stamp::of(m)));
        let now = match crate::source::fs::read_text_unless(Some(root), &path, &input.path, vouched) {
            Ok(Seen::Vouched(meta)) => {
                stamps.push(Some(Stamp::of(&meta)));
                continue;
            }
            Ok(Seen::Read(text, meta)) => {
                rehashed += 1;
                stamps.push(meta.as_ref().map(Stamp::of));
                Some(sha256_hex(text.as_bytes()))
            }
            Err(ReadError::Missing) => {
                stamps.push(None);
                None
            }
            Err(_) => return None,
        };
        if now != input.sha256 {
            return None;
        }
    }
    Some((rehashed, stamps))
}

/// What [`outputs_in_sync`] saw of a run of outputs.
struct Outputs {
    stamps: Vec<Option<crate::output::record::Stamp>>,
    bytes: BTreeMap<String, Vec<u8>>,
    rehashed: usize,
}

/// Whether `outputs` (the lock's, from index `first`) are in `walk`'s tree (every
/// directory on the way entered without following it, as reads do) with the recorded
/// hashes: `None` at the first that is not. An output `previous` vouches for is not read,
/// unless `scan` (every output is wanted) or `want` names it.
fn outputs_in_sync(
    walk: &mut disk::Walk,
    outputs: &[Out],
    first: usize,
    previous: Option<&crate::output::record::Record>,
    scan: bool,
    with: &ReplayWith,
    stop: &std::sync::atomic::AtomicBool,
) -> Option<Outputs> {
    use crate::output::record::Stamp;
    let mut seen = Outputs { stamps: Vec::with_capacity(outputs.len()), bytes: BTreeMap::new(), rehashed: 0 };
    for (k, o) in outputs.iter().enumerate() {
        if !disk::is_safe_relative(o.path) || stop.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        let st = walk.stat(o.path)?;
        if with.mode.is_some_and(|m| st.st_mode & 0o777 != m) {
            return None;
        }
        let now = Stamp::of_stat(&st);
        let vouched = previous.is_some_and(|r| r.vouches_output(first + k, &now));
        let scanned = scan && with.tokens.is_some();
        let wanted = (scan && !scanned) || with.want.contains(&o.path);
        if vouched && !wanted && !scanned {
            seen.stamps.push(Some(now));
            continue;
        }
        let (bytes, st) = walk.read(o.path, disk::MAX_OUTPUT)?;
        let read = Stamp::of_stat(&st);
        // Vouched bytes need no hash, if what was read is the file that was vouched for.
        if !(vouched && read == now) {
            seen.rehashed += 1;
            if !o.sha256.is_of(&bytes) {
                return None;
            }
        }
        if scanned && with.tokens.is_some_and(|t| t.found_in(&bytes)) {
            return None;
        }
        seen.stamps.push(Some(read));
        if wanted {
            seen.bytes.insert(o.path.to_string(), bytes);
        }
    }
    Some(seen)
}

/// A committed lock as `--check` reads it, once, with the stat record found for it.
pub(crate) struct Committed {
    /// The lock; its `outputs` are empty when it was decoded from the record's copy (the
    /// replay reads them from there).
    pub lock: Lock,
    /// The digest of its bytes a stat record is bound to (`record::lock_digest`).
    digest: [u8; 32],
    /// Read from the clock before the lock was looked at (the next record's time).
    time: crate::output::record::Time,
    /// Where its record is kept (`None`: no record is read or written).
    at: Option<std::path::PathBuf>,
    /// Its `fstat` when it was looked at.
    stamp: crate::output::record::Stamp,
    /// Its permission bits then.
    pub mode: u32,
    /// Decoded from the record's copy, not parsed.
    copied: bool,
    /// Read and hashed to find the copy its own (its stamp is not the record's): the next
    /// record keeps its stamp.
    restamp: bool,
    /// The record bound to it.
    previous: Option<crate::output::record::Record>,
}

/// The lock committed in `out`, read as `--check` reads it (never through a symlink,
/// bounded); `None` when there is none or it does not parse. With `records` (the stat
/// records' directory), the record of `out` is found too, never inside `out` nor any of
/// `untrusted` (the repository under review, whose author would write it), whatever
/// `--root` says; when the record vouches for the lock's stamp, the lock is decoded from
/// its copy instead of read, hashed and parsed.
pub(crate) fn committed(out: &Path, records: Option<&Path>, untrusted: &[&Path]) -> Option<Committed> {
    use crate::output::record::{self, Stamp};
    use std::io::Read;
    if disk::not_a_directory(out).is_some() {
        return None;
    }
    // Before anything is looked at: a file changed after this is never vouched for.
    let time = record::now();
    let file = disk::open(&out.join(LOCK), false).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > disk::MAX_BOOKKEEPING {
        return None;
    }
    let stamp = Stamp::of(&meta);
    let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777;
    let at = records.and_then(|dir| crate::disk::cache_path(dir, out, untrusted));
    let previous = at.as_ref().and_then(|p| record::load_any(p));
    if let Some(r) = &previous
        && let Some(lock) = r.copy_for(&stamp).and_then(copied_head)
        && lock.inputs.len() == r.inputs()
    {
        return Some(Committed { digest: r.lock(), lock, time, at, stamp, mode, copied: true, restamp: false, previous });
    }
    let mut text = Vec::with_capacity(usize::try_from(meta.len()).ok()?);
    (&file).take(disk::MAX_BOOKKEEPING + 1).read_to_end(&mut text).ok()?;
    if text.len() as u64 > disk::MAX_BOOKKEEPING {
        return None;
    }
    let digest = record::lock_digest(&text);
    // A record bound to these very bytes holds a copy of them, decoded rather than parsed
    // (a lock written within the record's clock tick is never vouched for by its stamp,
    // as after a compile that wrote it: 1.4 MB of JSON at 3,000 agent ids).
    if let Some(r) = previous.as_ref().filter(|r| r.lock() == digest)
        && let Some(lock) = r.copy().and_then(copied_head)
        && lock.inputs.len() == r.inputs()
    {
        return Some(Committed { digest, lock, time, at, stamp, mode, copied: true, restamp: true, previous });
    }
    let lock = serde_json::from_slice::<Lock>(&text).ok()?;
    let previous = previous.filter(|r| r.is_for(&digest, lock.inputs.len(), lock.outputs.len()));
    Some(Committed { lock, digest, time, at, stamp, mode, copied: false, restamp: false, previous })
}

/// Whether the pod file `pod` (named `name` in the lock, relative to the pod directory)
/// is certainly not the one the compile that left the stat record of `out` read: changed
/// since that record's time, and its bytes not those the record's copy of the lock names.
/// A compile trying to answer from the lock asks first: an edited pod then costs a stamp
/// and a hash of the pod, not the lock read and hashed (1.4 MB at 3,000 agent ids). Only
/// for declining (a compile follows), so the copy need not be bound to the lock here;
/// `false` whenever anything cannot be read. The pod is read only inside `root`, as the
/// compile reads it.
pub(crate) fn pod_edited(
    out: &Path,
    records: Option<&Path>,
    untrusted: &[&Path],
    root: &crate::source::fs::InputRoot,
    (pod, name): (&Path, &str),
) -> bool {
    use crate::output::record;
    let Some(at) = records.and_then(|dir| disk::cache_path(dir, out, untrusted)) else { return false };
    if !record::time_at(&at).is_some_and(|time| disk::stamped_since(pod, time)) {
        return false;
    }
    let Some(lock) = record::load_any(&at).and_then(|r| r.copy().and_then(copied_head)) else { return false };
    let Some(recorded) = lock.inputs.iter().find(|i| i.role == "pod" && i.path == name) else { return false };
    let Ok(text) = crate::source::fs::read_text(Some(root), pod, name) else { return false };
    recorded.sha256.as_deref() != Some(sha256_hex(text.as_bytes()).as_str())
}

/// An output of the lock as a replay looks at it, borrowed from the parsed lock or from
/// the record's copy of it (no string is copied for 9,301 outputs).
struct Out<'a> {
    path: &'a str,
    sha256: Sha<'a>,
}

/// A SHA-256 as the lock spells it (hex) or as the copy keeps it (its bytes).
enum Sha<'a> {
    Hex(&'a str),
    Raw(&'a [u8; 32]),
}

impl Sha<'_> {
    fn is_of(&self, bytes: &[u8]) -> bool {
        match self {
            Sha::Hex(hex) => sha256_hex(bytes) == *hex,
            Sha::Raw(raw) => crate::digest::sha256(bytes) == **raw,
        }
    }

    fn bytes(&self) -> Option<[u8; 32]> {
        match self {
            Sha::Hex(hex) => {
                let mut b = [0; 32];
                hex::decode_to_slice(hex, &mut b).ok().map(|()| b)
            }
            Sha::Raw(raw) => Some(**raw),
        }
    }
}

/// What a stat record keeps of a lock for the next check, which decodes it instead of
/// the lock: `head` (the lock, its outputs left out) as JSON, then the outputs' count,
/// then each output as a two-byte length, its path and the 32 bytes of its SHA-256. `None`
/// when an output does not fit that.
fn copy(head: &Lock, outputs: &[Out]) -> Option<Vec<u8>> {
    let json = serde_json::to_vec(head).ok()?;
    let mut b = Vec::with_capacity(8 + json.len() + outputs.iter().map(|o| 34 + o.path.len()).sum::<usize>());
    b.extend_from_slice(&u32::try_from(json.len()).ok()?.to_le_bytes());
    b.extend_from_slice(&json);
    b.extend_from_slice(&u32::try_from(outputs.len()).ok()?.to_le_bytes());
    for o in outputs {
        b.extend_from_slice(&u16::try_from(o.path.len()).ok()?.to_le_bytes());
        b.extend_from_slice(o.path.as_bytes());
        b.extend_from_slice(&o.sha256.bytes()?);
    }
    Some(b)
}

/// [`copy`] of a lock made by a compile, written as it is read back from the lock's list
/// of outputs (which may be on disk), never held (6.5 MB at 30,000 agent ids): how long
/// it is, and what writes it. `None` for a lock rendered whole, with inline tokens, or
/// whose outputs do not fit the copy or cannot be read back.
pub(crate) fn copy_of(lock: &Pending) -> Option<(usize, impl Fn(&mut dyn std::io::Write) -> std::io::Result<()> + '_)> {
    let Form::Listed { rest, outputs, redacted: true, .. } = &lock.form else { return None };
    let head_len = rest.len() + NONE.len();
    let (mut len, mut count) = (8 + head_len, 0usize);
    for o in outputs.iter() {
        let (path, _) = o.ok()?;
        u16::try_from(path.len()).ok()?;
        len += 34 + path.len();
        count += 1;
    }
    let count = u32::try_from(count).ok()?;
    u32::try_from(head_len).ok()?;
    let write = move |w: &mut dyn std::io::Write| {
        w.write_all(&(head_len as u32).to_le_bytes())?;
        w.write_all(rest)?;
        w.write_all(NONE)?;
        w.write_all(&count.to_le_bytes())?;
        for o in outputs.iter() {
            let (path, digest) = o?;
            w.write_all(&(path.len() as u16).to_le_bytes())?;
            w.write_all(path.as_bytes())?;
            w.write_all(&digest)?;
        }
        Ok(())
    };
    Some((len, write))
}

/// The head (JSON) of a [`copy`] read from `r` as it comes, leaving `r` at its outputs.
pub(crate) fn read_copied_head(r: &mut impl std::io::Read) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut len = [0; 4];
    r.read_exact(&mut len).ok()?;
    let len = u32::from_le_bytes(len);
    let mut head = Vec::new();
    r.take(u64::from(len)).read_to_end(&mut head).ok()?;
    (head.len() == len as usize).then_some(head)
}

/// The outputs of a [`copy`] read from `r` (after [`read_copied_head`]) as they come,
/// each handed to `each` with its position, never held: how many there are, or `None`
/// when they do not decode to the copy's last byte. An error from `each` stops it.
pub(crate) fn read_copied_outputs<E>(
    r: &mut impl std::io::Read,
    mut each: impl FnMut(usize, &str, [u8; 32]) -> Result<(), E>,
) -> Result<Option<usize>, E> {
    let mut n = [0; 4];
    if r.read_exact(&mut n).is_err() {
        return Ok(None);
    }
    let n = u32::from_le_bytes(n) as usize;
    let mut path = Vec::new();
    for i in 0..n {
        let mut len = [0; 2];
        let mut digest = [0; 32];
        if r.read_exact(&mut len).is_err() {
            return Ok(None);
        }
        path.resize(usize::from(u16::from_le_bytes(len)), 0);
        if r.read_exact(&mut path).is_err() || r.read_exact(&mut digest).is_err() {
            return Ok(None);
        }
        let Ok(path) = std::str::from_utf8(&path) else { return Ok(None) };
        each(i, path, digest)?;
    }
    Ok(matches!(r.read(&mut [0]), Ok(0)).then_some(n))
}

/// The head of the copy `b` (JSON) and its outputs' part.
fn split_copy(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = b.split_first_chunk::<4>()?;
    rest.split_at_checked(u32::from_le_bytes(*len) as usize)
}

/// The lock [`copy`] kept, its outputs left out.
fn copied_head(b: &[u8]) -> Option<Lock> {
    serde_json::from_slice::<Lock>(split_copy(b)?.0).ok().filter(|l| l.outputs.is_empty())
}

/// The outputs [`copy`] kept, if their part of the copy `b` is whole.
fn copied_outputs(b: &[u8]) -> Option<Vec<Out<'_>>> {
    let (_, rest) = split_copy(b)?;
    let (n, mut rest) = rest.split_first_chunk::<4>()?;
    let n = u32::from_le_bytes(*n) as usize;
    let mut outputs = Vec::with_capacity(n.min(rest.len() / 34));
    for _ in 0..n {
        let (len, r) = rest.split_first_chunk::<2>()?;
        let (path, r) = r.split_at_checked(u16::from_le_bytes(*len) as usize)?;
        let (hash, r) = r.split_first_chunk::<32>()?;
        outputs.push(Out { path: std::str::from_utf8(path).ok()?, sha256: Sha::Raw(hash) });
        rest = r;
    }
    rest.is_empty().then_some(outputs)
}

/// The image sources `lock` records, for `--check` when no flag, variable or file names
/// any: `[none]` for a tree compiled without images. `None` when the lock predates the
/// record, or a recorded path leaves `root` (the lock is untrusted: it cannot make clawc
/// read outside the repository). Paths come back joined onto `pod_dir`.
pub(crate) fn recorded_images(lock: &Lock, pod_dir: &Path, root: &crate::source::fs::InputRoot) -> Option<Vec<crate::image::ImageSource>> {
    use crate::image::ImageSource;
    if lock.images == "none" {
        return Some(vec![ImageSource::None]);
    }
    if lock.images != "read" || lock.image_sources.is_empty() {
        return None;
    }
    let inside = |p: &Path| {
        let joined = crate::source::fs::normalize(&pod_dir.join(p));
        root.holds(&joined).then_some(joined)
    };
    lock.image_sources
        .iter()
        .map(|s| match s.parse::<ImageSource>().ok()? {
            ImageSource::None => None,
            ImageSource::Oci(p) => inside(&p).map(ImageSource::Oci),
            ImageSource::Archive(p) => inside(&p).map(ImageSource::Archive),
            other => Some(other),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_described_digest_is_of_the_descriptors_and_snapshots_alone_in_any_order() {
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        let inputs = [
            ("svc/x/claw.describe.json", "descriptor", Some(a.as_str())),
            ("claw-pod.yml", "pod", Some(b.as_str())),
            (".claw-discovered/y.json", "snapshot", None),
            ("svc/x/Dockerfile", "dockerfile", Some(a.as_str())),
        ];
        let digest = described_digest(inputs);
        let mut reversed = inputs;
        reversed.reverse();
        assert_eq!(described_digest(reversed), digest, "any order");
        let mut pod_edited = inputs;
        pod_edited[1].2 = Some(a.as_str());
        pod_edited[3].2 = None;
        assert_eq!(described_digest(pod_edited), digest, "the pod and the Dockerfile are not described");
        for (i, changed) in [
            (0, ("svc/x/claw.describe.json", "descriptor", Some(b.as_str()))),
            (0, ("svc/x/claw.describe.json", "descriptor", None)),
            (0, ("svc/z/claw.describe.json", "descriptor", Some(a.as_str()))),
            (2, (".claw-discovered/y.json", "snapshot", Some(a.as_str()))),
            (2, (".claw-discovered/y.json", "descriptor", None)),
        ] {
            let mut edited = inputs;
            edited[i] = changed;
            assert_ne!(described_digest(edited), digest, "{changed:?}");
        }
        assert_ne!(described_digest(inputs[..2].iter().copied()), digest, "one fewer");
    }

    fn head() -> Lock {
        let env = LockEnv { keys: vec!["A".into()], sha256: "e".repeat(64), secret_keys: vec![] };
        Lock {
            version: VERSION,
            clawc: "0".into(),
            secrets: "redact".into(),
            images: "none".into(),
            image_sources: vec![],
            descriptors: BTreeMap::new(),
            runners: BTreeMap::from([("bot".into(), "claude-code".into())]),
            inputs: vec![LockInput { path: "claw-pod.yml".into(), role: "pod".into(), service: None, origin: None, sha256: None }],
            env,
            outputs: vec![],
        }
    }

    /// A copy of a pending lock's table of outputs.
    fn pending_table(p: &Pending) -> Listed {
        match &p.form {
            Form::Listed { outputs, .. } => Listed::sorted(outputs.iter().map(|e| e.map(|(p, d)| (p.into(), d)).unwrap()).collect()),
            Form::Whole(_) => Listed::default(),
        }
    }

    /// The lock's outputs, written without serde, are what serde writes, whatever their
    /// paths need escaped.
    #[test]
    fn a_lock_is_rendered_as_serde_renders_it() {
        let many: Vec<String> = (0..300).map(|i| format!("context/agent-{i}/tools.json")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let tables: [&[&str]; 6] = [
            &[],
            &[""],
            &["context/bot/tools.json"],
            &["a", "b", "context/a-1/CLAWDAPUS.md", "report/a.json"],
            &["<&>", "x\u{2028}y", "q\"uote", "back\\slash", "\u{1}", "é€😀"],
            &many,
        ];
        for paths in tables {
            let table = Listed::sorted(paths.iter().enumerate().map(|(i, p)| ((*p).into(), [i as u8; 32])).collect());
            let want = crate::artifact::json::to_go_json(&head().with_outputs(Written(&table)));
            let pending = Pending::of(&head().with_outputs(Written(&Listed::default())), table);
            assert_eq!(&pending.bytes()[..], &want[..], "{paths:?}");
            // What a write keeps in its stat record decodes as the check's copy does.
            if let Some((len, write)) = copy_of(&pending) {
                let mut kept = Vec::new();
                write(&mut kept).unwrap();
                assert_eq!(kept.len(), len, "{paths:?}");
                assert_eq!(copied_head(&kept).as_ref(), Some(&head()), "{paths:?}");
                let back: Vec<(&str, [u8; 32])> =
                    copied_outputs(&kept).unwrap().iter().map(|o| (o.path, o.sha256.bytes().unwrap())).collect();
                let want: Vec<(String, [u8; 32])> =
                    pending_table(&pending).iter().map(|e| e.map(|(p, d)| (p.into_owned(), d)).unwrap()).collect();
                assert_eq!(back.iter().map(|(p, d)| (p.to_string(), *d)).collect::<Vec<_>>(), want, "{paths:?}");
                // Read as it comes, it is the same, and a byte short or long is no copy.
                let mut r = &kept[..];
                assert_eq!(read_copied_head(&mut r).map(|h| serde_json::from_slice::<Lock>(&h).unwrap()), Some(head()));
                let mut streamed = Vec::new();
                let n = read_copied_outputs(&mut r, |i, p, d| {
                    streamed.push((i, p.to_string(), d));
                    Ok::<_, ()>(())
                })
                .unwrap();
                assert_eq!(n, Some(want.len()));
                assert_eq!(streamed.into_iter().map(|(_, p, d)| (p, d)).collect::<Vec<_>>(), want, "{paths:?}");
                for bad in [&kept[..kept.len() - 1], &[&kept[..], b"x"].concat()[..]] {
                    let mut r = bad;
                    read_copied_head(&mut r).unwrap();
                    assert_eq!(read_copied_outputs(&mut r, |_, _, _| Ok::<_, ()>(())), Ok(None), "{paths:?}");
                }
            } else {
                assert!(paths.is_empty(), "a lock with outputs has a copy: {paths:?}");
            }
            assert_eq!(pending.len(), want.len() as u64, "{paths:?}");
            assert_eq!(pending.digest(), crate::output::record::lock_digest(&want), "{paths:?}");
            // Written before its digest was asked for: the digest is taken on the way.
            let fresh = Pending::of(&head().with_outputs(Written(&Listed::default())), pending_table(&pending));
            let mut written = Vec::new();
            fresh.write_hashing(&mut written).unwrap();
            assert_eq!(
                (&written[..], fresh.digest.get().copied()),
                (&want[..], Some(crate::output::record::lock_digest(&want))),
                "{paths:?}"
            );
            let mut again = Vec::new();
            fresh.write_hashing(&mut again).unwrap();
            assert_eq!(again, written, "written again with the digest known");
            // Written here, not by serde, whenever there are outputs.
            assert_eq!(matches!(pending.form, Form::Listed { .. }), !paths.is_empty(), "{paths:?}");
            // A record reads the same paths from it whichever way it was made.
            let whole = Pending::whole(want.clone().into());
            assert_eq!(whole.digest(), pending.digest());
            let (inputs, listed) = pending.recorded().expect("redacted");
            let mut sorted = paths.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!((inputs, listed.to_vec()), (head().inputs.len(), sorted.iter().map(ToString::to_string).collect()));
            assert_eq!(matches!(listed, RecordedPaths::Listed(_)), !paths.is_empty(), "not copied: {paths:?}");
            let (whole_inputs, read) = whole.recorded().expect("redacted");
            assert!(matches!(read, RecordedPaths::Read(_)));
            assert_eq!((whole_inputs, read.to_vec()), (inputs, listed.to_vec()), "{paths:?}");
            // The same list put backwards, each path twice (the second put's hash is the
            // one listed), past a budget of a few entries: on disk as sorted runs but for
            // the last few, and the same lock.
            for budget in [1, 3 * ENTRY, usize::MAX] {
                let mut listing = Listing::new(budget);
                for (i, p) in paths.iter().enumerate().rev() {
                    for d in [[0xee; 32], [i as u8; 32]] {
                        listing.put((*p).into(), d, tempfile::tempfile, |e| e).unwrap();
                    }
                }
                let listed = listing.finish();
                let runs = listed.runs();
                assert_eq!(runs > 0, budget == 1 && !paths.is_empty() || budget < usize::MAX && paths.len() > 3, "{budget} {paths:?}");
                let spilled = Pending::of(&head().with_outputs(Written(&Listed::default())), listed);
                assert_eq!(&spilled.bytes()[..], &want[..], "{budget} {paths:?}");
                assert_eq!(spilled.len(), want.len() as u64);
                assert_eq!(spilled.digest(), crate::output::record::lock_digest(&want));
                let mut written = Vec::new();
                spilled.write_hashing(&mut written).unwrap();
                assert_eq!(written, want);
                assert_eq!(spilled.recorded().expect("redacted").1.to_vec(), listed_paths(&pending));
            }
        }
    }

    fn listed_paths(p: &Pending) -> Vec<String> {
        p.recorded().expect("redacted").1.to_vec()
    }

    /// Every permutation of up to six positions, and long ones of many cycles, move each
    /// item where the order says.
    #[test]
    fn a_permutation_moves_each_item_where_its_order_says() {
        fn all(prefix: &mut Vec<usize>, n: usize, each: &mut dyn FnMut(&[usize])) {
            if prefix.len() == n {
                return each(prefix);
            }
            let left: Vec<usize> = (0..n).filter(|i| !prefix.contains(i)).collect();
            for i in left {
                prefix.push(i);
                all(prefix, n, each);
                prefix.pop();
            }
        }
        let check = |order: &[usize]| {
            let mut items: Vec<String> = (0..order.len()).map(|i| format!("item {i}")).collect();
            let want: Vec<String> = order.iter().map(|&i| items[i].clone()).collect();
            super::permute(&mut items, order.to_vec());
            assert_eq!(items, want, "{order:?}");
        };
        for n in 0..=6 {
            all(&mut Vec::new(), n, &mut |order| check(order));
        }
        let n = 10_007;
        check(&(0..n).map(|i| (i * 7919) % n).collect::<Vec<_>>());
        check(&(0..n).rev().collect::<Vec<_>>());
        check(&(0..n).map(|i| (i + 1) % n).collect::<Vec<_>>());
    }

    /// The outputs are listed in path order whatever order they were put in, each path
    /// once, with the hash put last.
    #[test]
    fn outputs_are_listed_in_path_order_each_once() {
        let put = |order: &[(&str, u8)]| Listed::sorted(order.iter().map(|(p, d)| ((*p).into(), [*d; 32])).collect());
        let listed = put(&[("report/b.json", 1), ("context/a/x", 2), ("report.json", 3), ("context/a/x", 4), ("context/b", 5)]);
        let all = |l: &Listed| l.iter().map(|e| e.map(|(p, d)| (p.into_owned(), d[0])).unwrap()).collect::<Vec<_>>();
        let got = all(&listed);
        assert_eq!(got, [("context/a/x", 4), ("context/b", 5), ("report.json", 3), ("report/b.json", 1)].map(|(p, d)| (p.to_string(), d)));
        let reversed = put(&[("context/b", 5), ("report.json", 3), ("context/a/x", 4), ("report/b.json", 1)]);
        assert_eq!(all(&reversed), got);
        assert!(put(&[]).is_empty());
    }

    #[test]
    fn the_copy_a_record_keeps_decodes_to_the_same_lock() {
        let outputs = [("a/tools.json", "0f".repeat(32)), ("é/b", "a1".repeat(32))];
        let outs: Vec<Out> = outputs.iter().map(|(p, h)| Out { path: p, sha256: Sha::Hex(h) }).collect();
        let kept = copy(&head(), &outs).unwrap();
        assert_eq!(copied_head(&kept).unwrap(), head());
        let back = copied_outputs(&kept).unwrap();
        assert_eq!(back.iter().map(|o| o.path).collect::<Vec<_>>(), ["a/tools.json", "é/b"]);
        for (o, (_, hex)) in back.iter().zip(&outputs) {
            assert_eq!(o.sha256.bytes().map(hex::encode).as_ref(), Some(hex));
        }
        // Raw and hex spellings judge bytes alike.
        let digest = sha256_hex(b"x");
        let raw = Sha::Hex(&digest).bytes().unwrap();
        assert!(Sha::Raw(&raw).is_of(b"x") && Sha::Hex(&digest).is_of(b"x") && !Sha::Raw(&raw).is_of(b"y"));
        // Anything but a whole copy decodes to nothing.
        for n in [0, 3, 10, kept.len() - 1] {
            assert!(copied_outputs(&kept[..n]).is_none(), "cut at {n}");
        }
        assert!(copied_head(&kept[..10]).is_none());
        assert!(copied_outputs(&[kept.as_slice(), b"x"].concat()).is_none(), "a byte more");
        // A hash that is not 64 hex digits, or a path too long for its length, is not kept.
        let bad = [Out { path: "a", sha256: Sha::Hex("xyz") }];
        assert!(copy(&head(), &bad).is_none());
        let long = "a".repeat(70_000);
        assert!(copy(&head(), &[Out { path: &long, sha256: Sha::Hex(&digest) }]).is_none());
    }
}
