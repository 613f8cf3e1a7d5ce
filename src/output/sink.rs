//! Where a compile puts the tree it makes, a batch at a time: the whole tree in memory
//! ([`ArtifactSet`]), nothing (`Discard`), a write into `--out`
//! ([`super::write::Writer`]), or a comparison with it ([`super::check::Drift`]).

use crate::artifact::{Artifact, ArtifactSet, Memo, Output, Streamed, Taken};
use crate::diag::Diagnostic;
use crate::lock::{LOCK, Pending};

/// Where the compile puts the tree, a batch of files at a time, `clawc.lock` last: a
/// batch's bytes may be dropped once taken, so a compile that writes as it goes holds one
/// batch, not the tree. The batches are the same and come in the same order whatever
/// the thread count.
pub trait Sink {
    /// Takes one batch. An error stops the sink: the compile goes on (its own errors come
    /// first) but puts nothing more.
    fn put(&mut self, batch: Vec<Output>) -> Result<(), Diagnostic>;

    /// Takes one file too long to hold, made as it is written ([`Streamed`]), after
    /// [`Sink::held`] said the sink holds little. A sink that writes makes its bytes only
    /// where the file changes. By default they are made into memory and put as a batch.
    fn put_streamed(&mut self, path: std::sync::Arc<str>, file: Streamed<'_>) -> Result<(), Diagnostic> {
        let bytes =
            file.bytes().map_err(|e| Diagnostic::error(crate::diag::catalogue::output::IO, format!("cannot make `{path}`: {e}")))?;
        let artifact = Artifact { bytes: bytes.into(), secret: false, executable: false };
        self.put(vec![Output { path, artifact, sha256: hex::encode(file.digest) }])
    }

    /// Whether the sink may hold files a compile need not render ([`Sink::reuse`]); when
    /// not, the compile does not compute render keys.
    fn reuses(&self) -> bool {
        false
    }

    /// For each of `wanted` (an agent service and the render key of its inputs): its files
    /// as the previous compile rendered them from inputs with that key, when the sink
    /// holds them still unchanged (then they count as put, with the hashes its lock records,
    /// and the compile does not render the service); `None` otherwise. Asked about a few
    /// thousand agent ids at a time, services in name order.
    fn reuse(&mut self, wanted: &[(&str, &[u8; 32])]) -> Vec<Option<Taken>> {
        vec![None; wanted.len()]
    }

    /// How many outputs the tree the sink holds lists (its lock's), once asked to
    /// [`Sink::reuse`]: a recompile puts about as many, so the list of what it puts is
    /// made that size at once rather than grown by doubling (2 MB spare at 30,000 agent
    /// ids).
    fn listed(&self) -> usize {
        0
    }

    /// How many bytes of the list of outputs put (for the lock) the compile may hold: past
    /// it, the list goes to [`Sink::spill`] as sorted runs. All of it by default.
    fn held(&self) -> usize {
        usize::MAX
    }

    /// A file of the sink's for the list of outputs past [`Sink::held`]: unnamed, the
    /// compile's alone, gone once closed.
    fn spill(&mut self) -> Result<std::fs::File, Diagnostic> {
        Err(Diagnostic::error(crate::diag::catalogue::output::IO, "this sink holds the whole list of outputs"))
    }

    /// Takes `clawc.lock`, after every other file: `secret` when any output holds a literal
    /// token (the lock is then as sensitive). By default its bytes are made and put as a
    /// batch of their own; a sink that writes it may instead write it as it is made.
    fn lock(&mut self, lock: Pending, secret: bool) -> Result<(), Diagnostic> {
        let bytes = lock.bytes();
        let sha256 = hex::encode(lock.digest());
        self.put(vec![Output { path: LOCK.into(), artifact: Artifact { bytes, secret, executable: false }, sha256 }])
    }

    /// What this compile took or rendered, for the next one's [`Sink::reuse`], a part at a
    /// time before the lock is put: the services of each call to [`Sink::reuse`] taken from
    /// the tree (`taken`), then each batch of them rendered. Of either kind, the services
    /// of a part come after those of the part before in name order.
    fn remember(&mut self, _part: Memo, _taken: bool) {}

    /// The digest of the descriptors this compile read ([`crate::lock::described_digest`]),
    /// told as soon as they are read: a sink looking at the previous tree ahead of the
    /// render keys stops when it is not the previous compile's, since then next to no key
    /// is unchanged.
    fn described(&mut self, _digest: [u8; 32]) {}
}

/// The whole tree in memory (the library API, `--check`, the golden tests).
impl Sink for ArtifactSet {
    fn put(&mut self, batch: Vec<Output>) -> Result<(), Diagnostic> {
        self.0.extend(batch.into_iter().map(|o| (o.path.to_string(), o.artifact)));
        Ok(())
    }
}

/// A sink that keeps nothing: for the commands that compile only to question what was
/// resolved (`explain`, `who-can`, `report`), whose peak then holds a batch, not the tree.
pub(crate) struct Discard;

impl Sink for Discard {
    fn put(&mut self, _: Vec<Output>) -> Result<(), Diagnostic> {
        Ok(())
    }

    /// Not even made.
    fn lock(&mut self, _: Pending, _: bool) -> Result<(), Diagnostic> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts what is put; holds a few hundred bytes of the list of outputs, and has no
    /// file to put the rest in.
    struct NoDisk(usize);

    impl Sink for NoDisk {
        fn put(&mut self, batch: Vec<Output>) -> Result<(), Diagnostic> {
            self.0 += batch.len();
            Ok(())
        }

        fn held(&self) -> usize {
            200
        }

        fn spill(&mut self) -> Result<std::fs::File, Diagnostic> {
            Err(Diagnostic::error(crate::diag::catalogue::output::IO, "no space left for the list of outputs"))
        }
    }

    /// A sink that cannot keep the list of outputs on disk stops the compile's putting
    /// with its diagnostic, which the compile hands back; nothing more is put after it.
    #[test]
    fn a_list_of_outputs_that_cannot_go_to_disk_stops_the_putting_with_its_error() {
        let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
        let opts = crate::Options { pod: example.join("claw-pod.yml"), ..Default::default() };
        let mut sink = NoDisk(0);
        let (compiled, failed) = crate::compile_into(&opts, &mut sink);
        assert!(!compiled.diagnostics.has_errors(), "{:?}", compiled.diagnostics.0.first());
        let failed = failed.expect("the sink's error is handed back");
        assert_eq!((failed.code, failed.message.as_str()), (crate::diag::catalogue::output::IO, "no space left for the list of outputs"));
        let mut all = ArtifactSet::default();
        crate::compile_into(&opts, &mut all);
        assert!(sink.0 < all.0.len() - 1, "put {} of {} before the list filled its budget", sink.0, all.0.len());
    }
}
