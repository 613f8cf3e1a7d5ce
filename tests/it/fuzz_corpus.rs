//! Replays every fuzz corpus input (`fuzz/corpus/<target>/*`) through its target's
//! `clawc::fuzzing` entry point, in process, on stable: no input may panic or take
//! longer than [`LIMIT`]. An empty or missing corpus directory fails, so the replay can
//! never silently test nothing. See docs/fuzzing.md.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Corpus inputs that still panic or hang in the library: `(target, file name)`. Each is
/// skipped here (and only here) until the code is fixed; then delete its entry so the
/// input joins the passing set. Every entry must name an existing `crash-*` file. Set
/// `CLAWC_FUZZ_KNOWN_FAILING=1` to replay them too (to check a fix).
const KNOWN_FAILING: &[(&str, &str)] = &[
    // `x-claw: count: 4294967295` (a 63-byte pod): `count` is clamped to u32::MAX only
    // (src/pod/parse.rs:348), and `Claw::agent_ids` (src/pod/mod.rs:91, from
    // src/project/mod.rs:41 and src/compile.rs `run`) allocates a Vec of that many IDs:
    // "memory allocation of 103079215080 bytes failed", abort. Smaller counts are linear
    // but unbounded (100000: 25 s, 500 MB RSS, 823 MB written; 3000000: > 4 GB).
    ("pod", "crash-count-unbounded.yml"),
    // 4000 unknown x-claw keys (59 KB): 4000 warnings, and each human-format report
    // copies and scans the whole pod text (src/diag.rs:149 `Diagnostic::to_report`):
    // quadratic, 34 s in a debug build (2000 keys: 13 s); `--format json` stays linear.
    ("pod", "crash-many-unknown-keys.yml"),
    // 3000 tools without a name or inputSchema (66 KB): each of the 6000 diagnostics of
    // src/describe/decode.rs re-scans the text (`json_span::locate`, `SourceFile::span`
    // in src/sourcemap.rs:47): quadratic, 42 s in a debug build even with --format json.
    ("descriptor", "crash-many-bad-tools.json"),
    // 20 tools whose inputSchema has `patternProperties: {"\\p{L}{1000000}": {}}` (2.4 KB):
    // the meta-schema check (src/describe/schema.rs:38, `jsonschema::meta::validate`)
    // compiles each pattern, about 2 s each before the regex size limit refuses it:
    // 42 s in a debug build, linear in tools with no cap (8 MiB: days).
    ("descriptor", "crash-regex-compile-per-tool.json"),
    // 30000 `x` lines (60 KB): each bad line's span is computed from the start of the
    // file (src/pod/env.rs:94 → `SourceFile::span`, src/sourcemap.rs:47): quadratic,
    // 60 s in a debug build with --format json; an 8 MiB .env would run for days.
    ("dotenv", "crash-many-bad-lines.env"),
    // A 33 KB zstd layer holding a GNU long-name entry of 1 GiB: the tar crate reads
    // long names (and PAX headers) into memory whole, uncapped, while
    // src/image/layers.rs `index_layer` iterates `entries()`: libFuzzer out-of-memory
    // (malloc(2147483648)); the same from `--images archive:` (a 256 MiB one in a 266 KB
    // archive: 869 MB RSS). Its `/.claw-describe.json` is a chain of 12 symlinks, so
    // `find_files` streams the layer again each round (8): this replay has no memory
    // limit and fails on time instead.
    ("layer", "crash-gnu-longname-1gib.tar.zst"),
    // The same with a 1 GiB PAX extended header (the tar crate also scans it per entry
    // field: 256 MiB takes 65 s in a debug build).
    ("layer", "crash-pax-header-1gib.tar.zst"),
    // A 67 KB zstd layer holding a 2 GiB file nobody asked for, and the symlink chain:
    // `index_layer` has the tar crate skip the file by decompressing all of it, once per
    // link round of `find_files` (up to 8 rounds, every layer each time): CPU time is
    // bounded only by the decompressed size (zstd: ~32000× the input) times the rounds.
    // A cap on bytes decompressed per layer or image is a design choice for the lead.
    ("layer", "crash-zstd-skip-2gib.tar.zst"),
];

/// Per input, in a debug build (generous: the corpus inputs take milliseconds).
const LIMIT: Duration = Duration::from_secs(30);

/// The stack a compile runs on (the main thread's default).
const STACK: usize = 8 * 1024 * 1024;

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join("corpus")
}

fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = corpus_root().join(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("corpus directory {} is missing: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries.map(|e| e.expect("corpus entry").path()).filter(|p| p.is_file()).collect();
    files.sort();
    assert!(!files.is_empty(), "corpus directory {} is empty: a target without inputs tests nothing", dir.display());
    files
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".to_string())
}

/// Runs every input of `target`; fails listing each one that panicked or was too slow.
fn replay(target: &str) {
    let run = clawc::fuzzing::TARGETS.iter().find(|(name, _)| *name == target).unwrap_or_else(|| panic!("no fuzz target {target}")).1;
    let known_too = std::env::var_os("CLAWC_FUZZ_KNOWN_FAILING").is_some();
    let mut failures = Vec::new();
    let mut ran = 0;
    for path in inputs(target) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !known_too && KNOWN_FAILING.contains(&(target, name.as_str())) {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        let (tx, rx) = mpsc::channel();
        let start = Instant::now();
        std::thread::Builder::new()
            .name(format!("{target}/{name}"))
            .stack_size(STACK)
            .spawn(move || {
                let result = std::panic::catch_unwind(|| run(&data)).map_err(|p| panic_message(&*p));
                let _ = tx.send(result);
            })
            .unwrap();
        match rx.recv_timeout(LIMIT) {
            Ok(Ok(())) if known_too => eprintln!("{target}/{name}: passed in {:?}", start.elapsed()),
            Ok(Ok(())) => {}
            Ok(Err(msg)) => failures.push(format!("{target}/{name}: panicked: {msg}")),
            // The thread is left running; the test fails anyway.
            Err(_) => failures.push(format!("{target}/{name}: still running after {:?}", start.elapsed())),
        }
        ran += 1;
    }
    assert!(ran > 0, "every input of {target} is known-failing: nothing was replayed");
    assert!(
        failures.is_empty(),
        "fuzz corpus inputs failed (add `crash-*` files to KNOWN_FAILING only with a report):\n{}",
        failures.join("\n")
    );
}

#[test]
fn pod_corpus() {
    replay("pod");
}

#[test]
fn descriptor_corpus() {
    replay("descriptor");
}

#[test]
fn snapshot_corpus() {
    replay("snapshot");
}

#[test]
fn dotenv_corpus() {
    replay("dotenv");
}

#[test]
fn archive_corpus() {
    replay("archive");
}

#[test]
fn layer_corpus() {
    replay("layer");
}

/// Every target has a replay test above, a cargo-fuzz target calling it and a corpus;
/// every `KNOWN_FAILING` entry names a `crash-*` file that exists.
#[test]
fn targets_corpora_and_known_failures_agree() {
    let source = include_str!("fuzz_corpus.rs");
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).unwrap();
    for (name, _) in clawc::fuzzing::TARGETS {
        assert!(source.contains(&format!("replay(\"{name}\")")), "no replay test for fuzz target {name}");
        let target = std::fs::read_to_string(fuzz.join("fuzz_targets").join(format!("{name}.rs")))
            .unwrap_or_else(|e| panic!("fuzz/fuzz_targets/{name}.rs: {e}"));
        assert!(target.contains(&format!("clawc::fuzzing::{name}(")), "fuzz/fuzz_targets/{name}.rs does not call clawc::fuzzing::{name}");
        assert!(manifest.contains(&format!("name = \"{name}\"")), "fuzz/Cargo.toml has no [[bin]] {name}");
        assert!(!inputs(name).is_empty());
    }
    let dirs: Vec<String> =
        std::fs::read_dir(corpus_root()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    for dir in &dirs {
        assert!(clawc::fuzzing::TARGETS.iter().any(|(n, _)| n == dir), "fuzz/corpus/{dir} belongs to no target");
    }
    for (target, file) in KNOWN_FAILING {
        assert!(file.starts_with("crash-"), "KNOWN_FAILING entry {target}/{file}: name crashing inputs crash-*");
        assert!(corpus_root().join(target).join(file).is_file(), "KNOWN_FAILING entry {target}/{file} has no corpus file");
    }
}

/// The image seeds get past the tar and manifest checks (so fuzzing starts from inputs
/// that reach the layer walker and the descriptor decoder, not only error paths).
#[test]
fn image_seeds_reach_the_files_inside() {
    use clawc::image::FileRead;
    let archive = corpus_root().join("archive").join("edge-legacy.tar");
    let fixed = clawc::fuzzing::fix_tar_checksums(&std::fs::read(&archive).unwrap());
    assert_eq!(fixed, std::fs::read(&archive).unwrap(), "a valid archive is left as it is");
    let layout = clawc::image::layout::Layout::open_archive(&archive).unwrap();
    let refs = layout.references();
    assert_eq!(refs.len(), 1);
    let files = layout.read(&refs[0], &["/.claw-describe.json".into(), "/.claw-tools.json".into()]).unwrap();
    assert!(files.values().all(|f| matches!(f, FileRead::Text(_))), "{files:?}");
    let layer = std::fs::read(corpus_root().join("layer").join("edge-gzip.tar.gz")).unwrap();
    let open = |_| Ok(Box::new(&layer[..]) as Box<dyn std::io::Read>);
    let files = clawc::image::layers::find_files(1, open, &["/.claw-describe.json".into()]).unwrap();
    assert!(matches!(files["/.claw-describe.json"], FileRead::Text(_)), "{files:?}");
}
