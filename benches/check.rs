//! No-op `clawc compile --check` vs. hashing the pod's input files with `sha256sum`
//! (run: `cargo bench --bench check`; `CLAWC_BIN=path` to measure another build, e.g.
//! `scripts/build-release`'s). Both are spawned as processes; medians are reported, of
//! rounds that run each command once in turn, so a ratio compares the same moments.
//!
//! 1. The trading-desk example, 200 rounds.
//! 2. The compile bench's 3000-agent pod (9301 outputs, 101 input files; under
//!    `target/bench-tmp`, or `CLAWC_BENCH_DIR`), 30 rounds (5 for `--no-cache`): the
//!    check with the stat record of an earlier check (in a private `CLAWC_CACHE_DIR`),
//!    and with `--no-cache` (no record, so the check compiles and compares); the floor of a
//!    check that looks at every output, an `lstat` of each on every core with nothing
//!    else; and the first check after a compile that changed one agent service's grant
//!    (15 rounds), with the compile's own stat record.

use std::path::Path;
use std::process::Command;

#[path = "common/generate.rs"]
#[allow(dead_code)]
mod generate;
use std::time::{Duration, Instant};

fn copy(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == ".claw-compiled" || name == "expected" {
            continue;
        }
        let dst = to.join(&name);
        if e.path().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// The medians of `runs` rounds, each running every one of `fs` once in turn (after one
/// warm-up round): a ratio of two of them is taken in the same moments of a noisy
/// machine, not minutes apart.
fn medians<const N: usize>(runs: usize, mut fs: [&mut dyn FnMut(); N]) -> [Duration; N] {
    let mut times: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(runs));
    for round in 0..=runs {
        for (f, t) in fs.iter_mut().zip(&mut times) {
            let s = Instant::now();
            f();
            if round > 0 {
                t.push(s.elapsed());
            }
        }
    }
    times.map(|mut t| {
        t.sort();
        t[runs / 2]
    })
}

/// The input files `out/clawc.lock` records as read (what `sha256sum` is given).
fn inputs(out: &Path) -> Vec<String> {
    let lock: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("clawc.lock")).unwrap()).unwrap();
    lock["inputs"].as_array().unwrap().iter().filter(|i| !i["sha256"].is_null()).map(|i| i["path"].as_str().unwrap().to_string()).collect()
}

/// `clawc compile` in `dir` with the checks' cache: its stat record is what lets a check
/// answer from the lock.
fn compile(clawc: &str, dir: &Path, cache: &Path) {
    let ok = Command::new(clawc)
        .current_dir(dir)
        .env("CLAWC_CACHE_DIR", cache)
        .args(["compile", "--images", "none", "-o", "out"])
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
}

/// One no-op check in `dir`; returns how many files it re-hashed. It answers from the
/// lock, but with `--no-cache`: without a stat record a compile made, only a compile can.
fn check(clawc: &str, dir: &Path, cache: &Path, extra: &[&str]) -> u64 {
    let o = Command::new(clawc)
        .current_dir(dir)
        .env("CLAWC_CACHE_DIR", cache)
        .args(["compile", "--images", "none", "-o", "out", "--check", "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let by = if extra.contains(&"--no-cache") { "compile" } else { "lock" };
    assert_eq!(doc["answered_by"], by);
    doc["rehashed"].as_u64().unwrap_or(u64::MAX)
}

/// The output files `out/clawc.lock` records.
fn outputs(out: &Path) -> Vec<String> {
    let lock: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("clawc.lock")).unwrap()).unwrap();
    lock["outputs"].as_array().unwrap().iter().map(|o| o["path"].as_str().unwrap().to_string()).collect()
}

/// The floor of any check that looks at every output, as git's index does: one `lstat` of
/// each by its path from the tree's root, split over the machine's threads, and nothing
/// else (in this process: no start-up, no lock, no inputs).
fn stat_floor(out: &Path, paths: &[String]) {
    use rustix::fs::{AtFlags, CWD, Mode, OFlags, openat, statat};
    let root = openat(CWD, out, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let chunk = paths.len().div_ceil(threads);
    let found: usize = std::thread::scope(|s| {
        let root = &root;
        let parts: Vec<_> = paths
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().filter(|p| statat(root, p.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok()).count()))
            .collect();
        parts.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(found, paths.len());
}

fn sha256sum(dir: &Path, inputs: &[String]) {
    let o = Command::new("sha256sum").current_dir(dir).args(inputs).output().unwrap();
    assert!(o.status.success());
}

fn main() {
    let quick = !std::env::args().any(|a| a == "--bench");
    let runs = if quick { 3 } else { 200 };
    let dir = tempfile::tempdir().unwrap();
    copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk"), dir.path());
    // CLAWC_BIN measures another build (e.g. the static one from scripts/build-release).
    let bin = std::env::var("CLAWC_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_clawc").to_string());
    let clawc = bin.as_str();
    let cache = tempfile::tempdir().unwrap();
    println!("binary: {clawc}");
    compile(clawc, dir.path(), cache.path());
    let files = inputs(&dir.path().join("out"));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // Let the coarse clock pass the compile's writes, then let a check record the lock.
    std::thread::sleep(Duration::from_millis(50));
    check(clawc, dir.path(), cache.path(), &[]);
    let [fast, hash] = medians(runs, [&mut || _ = check(clawc, dir.path(), cache.path(), &[]), &mut || sha256sum(dir.path(), &files)]);
    println!("no-op `clawc compile --check` (trading-desk): median {:.2} ms", ms(fast));
    println!("`sha256sum` of its {} input files:          median {:.2} ms", files.len(), ms(hash));
    println!("ratio: {:.2}", fast.as_secs_f64() / hash.as_secs_f64());
    if quick {
        return;
    }
    let base =
        std::env::var_os("CLAWC_BENCH_DIR").map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp"), Into::into);
    std::fs::create_dir_all(&base).unwrap();
    let big = tempfile::tempdir_in(base).unwrap();
    generate::generate(big.path(), 300);
    // The compile's own stat record is what the first check finds.
    let compile = || compile(clawc, big.path(), cache.path());
    compile();
    let files = inputs(&big.path().join("out"));
    std::thread::sleep(Duration::from_millis(50));
    let first = check(clawc, big.path(), cache.path(), &[]);
    let mut rehashed = 0;
    let listed = outputs(&big.path().join("out"));
    let [fast, hash, floor] = medians(
        30,
        [&mut || rehashed = check(clawc, big.path(), cache.path(), &[]), &mut || sha256sum(big.path(), &files), &mut || {
            stat_floor(&big.path().join("out"), &listed);
        }],
    );
    let [full] = medians(5, [&mut || _ = check(clawc, big.path(), cache.path(), &["--no-cache"])]);
    println!("3000 agent ids: no-op check with the stat record: median {:.2} ms (re-hashed {rehashed}; the first check {first})", ms(fast));
    println!("3000 agent ids: no-op check with --no-cache (compiles): median {:.2} ms", ms(full));
    println!("`sha256sum` of its {} input files:             median {:.2} ms", files.len(), ms(hash));
    println!("floor: `lstat` of its {} outputs, nothing else:  median {:.2} ms", listed.len(), ms(floor));
    println!(
        "ratio: {:.2} with the record, {:.2} without; the floor alone is {:.2} × `sha256sum`, the check {:.2} × the floor",
        fast.as_secs_f64() / hash.as_secs_f64(),
        full.as_secs_f64() / hash.as_secs_f64(),
        floor.as_secs_f64() / hash.as_secs_f64(),
        fast.as_secs_f64() / floor.as_secs_f64()
    );
    // The first check after a compile (a pre-commit hook after `clawc compile`): rounds
    // that narrow or put back one agent service's grant, compile, let the coarse clock
    // pass the compile's writes, and check once.
    let pod = big.path().join("claw-pod.yml");
    let original = std::fs::read_to_string(&pod).unwrap();
    let edited = generate::narrowed(&original, 7);
    let (mut times, mut rehashed) = (Vec::new(), Vec::new());
    for round in 0..15 {
        std::fs::write(&pod, if round % 2 == 0 { &edited } else { &original }).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        compile();
        std::thread::sleep(Duration::from_millis(50));
        let s = Instant::now();
        rehashed.push(check(clawc, big.path(), cache.path(), &[]));
        times.push(s.elapsed());
    }
    times.sort();
    rehashed.sort_unstable();
    println!(
        "3000 agent ids: the first check after a one-agent recompile: median {:.2} ms (re-hashed {}–{} files)",
        ms(times[times.len() / 2]),
        rehashed[0],
        rehashed[rehashed.len() - 1]
    );
}
