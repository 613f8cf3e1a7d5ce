//! End-to-end benchmark of `clawc compile` on generated pods (run: `cargo bench`).
//!
//! A pod of `services × count` agent ids and 100 tool services × 20 tools; every agent is
//! granted 30 tools (20 through `tools-defaults` + `...`, 10 named). Each iteration
//! compiles from disk and writes the full tree into a fresh directory. Reports the median
//! of the iterations for 1× (300 agents) and 10× (3000 agents) and their ratio. With
//! `CLAWC_BIN=<release clawc>`, also that binary spawned on the 3,000-agent pod: a fresh
//! compile against one agent service's grant edited and compiled again (the render memo),
//! the floor of such an edit (an `lstat` of each file of the tree, one thread), and its
//! peak RSS at 3,000, 10,200 and 30,000 agent ids, and at 30,000 agent ids of the
//! 3,000-id pod's services (`count: 100`: the plans fixed, the agent ids ×10). Then the
//! same one-agent edit with every compile in this one process (a long-lived compiler that
//! keeps nothing), and as `compile --watch` runs it (the tree read while idle, the
//! descriptors kept between compiles).
//!
//! `cargo bench --bench compile -- --generate DIR [SCALE]` only writes the pod;
//! `cargo bench --bench compile -- --edits` runs only the in-process edit lines (every
//! compile in one process, and the edit as `compile --watch` runs it);
//! `CLAWC_BIN=… cargo bench --bench compile -- --peaks` only the peak RSS lines;
//! `CLAWC_BIN=… cargo bench --bench compile -- --floor` only the spawned edit and its floor.

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "common/generate.rs"]
mod generate;
use generate::{COUNT, generate, generate_with};

/// Scratch space under `target/`: a long-lived `/tmp` full of recently deleted inodes
/// makes ext4 file creation several times slower than the compile itself.
fn scratch() -> tempfile::TempDir {
    let base =
        std::env::var_os("CLAWC_BENCH_DIR").map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-tmp"), Into::into);
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

/// One compile from disk; with `write`, the full tree is written to a fresh directory.
fn once(pod_dir: &Path, write: bool) -> Duration {
    let out = scratch();
    let opts = clawc::Options { pod: pod_dir.join("claw-pod.yml"), ..Default::default() };
    let start = Instant::now();
    if write {
        written(&opts, out.path(), Default::default(), false);
    } else {
        let compiled = clawc::compile(&opts);
        assert!(compiled.artifacts.is_some(), "bench pod failed: {:?}", compiled.diagnostics.0.first());
    }
    start.elapsed()
}

/// Compiles `opts` into `out` as `clawc compile` does: the tree written as it is
/// compiled (with `ahead`, the previous tree read ahead on a thread of its own).
fn written(
    opts: &clawc::Options,
    out: &Path,
    write: clawc::output::write::WriteOptions<'_>,
    ahead: bool,
) -> clawc::output::write::WriteSummary {
    let mut writer = clawc::output::write::Writer::new(out, write, true);
    if ahead {
        writer.read_ahead();
    }
    let (compiled, failed) = clawc::compile_into(opts, &mut writer);
    assert!(compiled.exit_code() == 0 && failed.is_none(), "bench pod failed: {:?} {failed:?}", compiled.diagnostics.0.first());
    writer.finish(&compiled.secrets).unwrap()
}

fn median(pod_dir: &Path, runs: usize, write: bool) -> Duration {
    once(pod_dir, write); // warm the page cache
    let mut times: Vec<Duration> = (0..runs).map(|_| once(pod_dir, write)).collect();
    times.sort();
    times[runs / 2]
}

/// The tree clawc writes for the pod in `pod_dir`, in a scratch directory, and the paths
/// of its files in path order.
fn written_tree(pod_dir: &Path) -> (tempfile::TempDir, Vec<String>) {
    let tree = scratch();
    let compiled = clawc::compile(&clawc::Options { pod: pod_dir.join("claw-pod.yml"), ..Default::default() });
    let artifacts = compiled.artifacts.as_ref().unwrap();
    clawc::output::write::write_tree(tree.path(), artifacts, &compiled.secrets).unwrap();
    (tree, artifacts.0.keys().cloned().collect())
}

/// The yardstick for compile + write: `cp -r` of the very tree clawc writes for this pod,
/// into a fresh directory on the same file system (median of `runs`).
fn copy_median(pod_dir: &Path, runs: usize) -> Duration {
    let (tree, _) = written_tree(pod_dir);
    let once = || {
        let to = scratch();
        let start = Instant::now();
        let ok = std::process::Command::new("cp").arg("-r").arg(tree.path()).arg(to.path().join("copy")).status().unwrap().success();
        assert!(ok, "cp -r failed");
        start.elapsed()
    };
    once();
    let mut times: Vec<Duration> = (0..runs).map(|_| once()).collect();
    times.sort();
    times[runs / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--generate") {
        let dir = Path::new(&args[i + 1]);
        let scale: usize = args.get(i + 2).and_then(|s| s.parse().ok()).unwrap_or(1);
        generate(dir, 30 * scale);
        println!("generated {} agent ids in {}", 30 * scale * COUNT, dir.display());
        return;
    }
    if args.iter().any(|a| a == "--edits") {
        // `--bench --edits`: only the in-process edit lines (a long-lived compiler, a watch);
        // `--edits --watch`: the watch's alone (for a profile of its edits); with
        // `CLAWC_BIN`, `--edits --spawned`: only `clawc compile --watch` from save to summary.
        if let Some(bin) = std::env::var_os("CLAWC_BIN").filter(|_| args.iter().any(|a| a == "--spawned")) {
            let (fresh, edit) = watched(Path::new(&bin), 300, 7, 10);
            println!(
                "clawc compile --watch, 3000 agent ids: save to summary {edit:.1} ms, fresh clawc compile {fresh:.1} ms ({:.2})",
                edit / fresh
            );
            return;
        }
        if !args.iter().any(|a| a == "--watch") {
            let (fresh, edit) = warm_edits(300, 7, 15);
            println!("in one process, 3000 agent ids: fresh {fresh:.1} ms, edit {edit:.1} ms ({:.2} of fresh)", edit / fresh);
        }
        let Watched { fresh, edit, whole } = watch_edits(300, 7, 15);
        println!(
            "in a watch, 3000 agent ids: fresh {fresh:.1} ms, edit {edit:.1} ms ({:.2} of fresh), {whole:.1} ms with the record and memo",
            edit / fresh
        );
        return;
    }
    if let Some(bin) = std::env::var_os("CLAWC_BIN").filter(|_| args.iter().any(|a| a == "--floor")) {
        // `--bench --floor` with `CLAWC_BIN`: only the spawned edit and its `lstat` floor.
        one_shot(Path::new(&bin));
        return;
    }
    if let Some(bin) = std::env::var_os("CLAWC_BIN").filter(|_| args.iter().any(|a| a == "--peaks")) {
        // `--bench --peaks` with `CLAWC_BIN`: only the peak RSS lines.
        peaks(Path::new(&bin));
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return; // `cargo bench -- --list` (no libtest here)
    }
    if !args.iter().any(|a| a == "--bench") {
        // `cargo test --all-targets` runs this without `--bench`: check the generator only.
        let tiny = scratch();
        generate(tiny.path(), 1);
        let t = once(tiny.path(), true);
        println!("bench smoke test: {} agent ids compiled in {:.1} ms", COUNT, t.as_secs_f64() * 1e3);
        // And the edit scenario on three agent services: the two left alone are taken.
        let e = edits(Path::new(env!("CARGO_BIN_EXE_clawc")), 3, 1, 1, &[]);
        assert_eq!(e.reused, 2, "an edit of agent-1 renders it alone");
        println!("bench smoke test: one of 3 agent services edited, {} files written in {:.1} ms", e.written, e.edit);
        let (_, edit) = warm_edits(3, 1, 1);
        println!("bench smoke test: the same edit in one process, {edit:.1} ms");
        let Watched { edit, .. } = watch_edits(3, 1, 1);
        println!("bench smoke test: the same edit in a watch, {edit:.1} ms");
        let (_, edit) = watched(Path::new(env!("CARGO_BIN_EXE_clawc")), 3, 1, 1);
        println!("bench smoke test: the same edit in `clawc compile --watch`, save to summary {edit:.1} ms");
        return;
    }
    if let Some(bin) = std::env::var_os("CLAWC_BIN") {
        one_shot(Path::new(&bin));
        let (fresh, edit) = watched(Path::new(&bin), 300, 7, 10);
        println!(
            "clawc compile --watch, 3000 agent ids: one agent service's grant narrowed or put back, save to summary {edit:.1} ms, against a fresh clawc compile's {fresh:.1} ms ({:.2})",
            edit / fresh
        );
        busy_edits(Path::new(&bin));
        peaks(Path::new(&bin));
    }
    let (fresh, edit) = warm_edits(300, 7, 15);
    println!(
        "in one process (a long-lived compiler's floor), 3000 agent ids: fresh {fresh:.1} ms, one agent service's grant narrowed or put back {edit:.1} ms ({:.2} of fresh)",
        edit / fresh
    );
    let Watched { fresh, edit, whole } = watch_edits(300, 7, 15);
    println!(
        "in a watch (compile --watch: the tree read while idle), 3000 agent ids: fresh {fresh:.1} ms, one agent service's grant narrowed or put back {edit:.1} ms to its summary ({:.2} of fresh), {whole:.1} ms with the stat record and memo stored ({:.2})",
        edit / fresh,
        whole / fresh
    );
    let small = scratch();
    let large = scratch();
    generate(small.path(), 30);
    generate(large.path(), 300);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut written = [Duration::ZERO; 2];
    for (label, write) in [("compile (in memory)", false), ("compile + write tree", true)] {
        let t1 = median(small.path(), 15, write);
        let t10 = median(large.path(), 5, write);
        if write {
            written = [t1, t10];
        }
        println!(
            "{label:<22}  300 agent ids: {:>8.1} ms   3000 agent ids: {:>8.1} ms   ratio {:.2}",
            ms(t1),
            ms(t10),
            t10.as_secs_f64() / t1.as_secs_f64()
        );
    }
    let c1 = copy_median(small.path(), 15);
    let c10 = copy_median(large.path(), 5);
    println!("{:<22}  300 agent ids: {:>8.1} ms   3000 agent ids: {:>8.1} ms", "cp -r of the output", ms(c1), ms(c10));
    println!(
        "{:<22}  300 agent ids: {:>8.2}      3000 agent ids: {:>8.2}",
        "compile+write / cp -r",
        written[0].as_secs_f64() / c1.as_secs_f64(),
        written[1].as_secs_f64() / c10.as_secs_f64()
    );
}

/// The spawned one-agent edit at 3,000 agent ids against a fresh compile, and against
/// the floor of any one-shot recompile (an `lstat` of each file of the tree).
fn one_shot(bin: &Path) {
    let e = edits(bin, 300, 7, 7, &[]);
    println!(
        "clawc compile, 3000 agent ids: fresh {:.1} ms, one agent service's grant narrowed {:.1} ms ({:.2} of fresh; {} files written, {} of 300 agent services taken from the tree), put back {:.1} ms ({:.2})",
        e.fresh,
        e.edit,
        e.edit / e.fresh,
        e.written,
        e.reused,
        e.back,
        e.back / e.fresh
    );
    let floor = lstat_floor(300, 15);
    println!(
        "lstat of every file of the 3000-agent tree, one thread (what any compile that takes the tree as it finds it must look at): {floor:.1} ms ({:.3} of the fresh compile; the edit above is {:.1}× it)",
        floor / e.fresh,
        e.edit / floor
    );
}

/// The floor of a one-shot recompile that takes the previous tree as it finds it: one
/// `lstat` of each of its files (relative to the tree's root, in path order, one thread),
/// on the tree a pod of `services` agent services compiles to. Median (ms) of `rounds`.
fn lstat_floor(services: usize, rounds: usize) -> f64 {
    let pod = scratch();
    generate(pod.path(), services);
    let (tree, files) = written_tree(pod.path());
    let root = rustix::fs::open(tree.path(), rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY, rustix::fs::Mode::empty()).unwrap();
    let look = || {
        let start = Instant::now();
        for f in &files {
            rustix::fs::statat(&root, f, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).unwrap();
        }
        start.elapsed()
    };
    look();
    median_ms((0..rounds).map(|_| look()).collect())
}

/// What [`edits`] measured: medians (ms) of a fresh compile, of the compile after one agent
/// service's grant was narrowed, and of the compile after it was put back; and what the
/// edited compile wrote and took from the tree.
struct Edited {
    fresh: f64,
    edit: f64,
    back: f64,
    written: usize,
    reused: u64,
}

/// `bin` (spawned as a user runs it, with its own cache directory) on a generated pod of
/// `services` agent services: the grant of `agent-<agent>` narrowed by a tool and compiled,
/// then put back and compiled, against a fresh compile of the same pod, `rounds` times.
/// The issue's goal at 3,000 agent ids: the edit at most 10 % of the fresh compile,
/// writing only the files whose bytes change.
fn edits(bin: &Path, services: usize, agent: usize, rounds: usize, args: &[&str]) -> Edited {
    let EditPod { pod, cache, path, original, edited } = EditPod::new(services, agent);
    let compile = |out: &Path| {
        let start = Instant::now();
        let o = std::process::Command::new(bin)
            .args(["compile", "--images", "none", "claw-pod.yml", "--format", "json"])
            .args(args)
            .arg("-o")
            .arg(out)
            .current_dir(pod.path())
            .env("CLAWC_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        let took = start.elapsed();
        assert!(o.status.success(), "clawc compile failed: {}", String::from_utf8_lossy(&o.stderr));
        let last = o.stdout.split(|b| *b == b'\n').rfind(|l| !l.is_empty()).unwrap();
        let summary = &serde_json::from_slice::<serde_json::Value>(last).unwrap()["summary"];
        (took, summary["written"].as_array().map_or(0, Vec::len), summary["reused"].as_u64().unwrap_or(0))
    };
    let (mut fresh, mut edit, mut back) = (Vec::new(), Vec::new(), Vec::new());
    let (mut written, mut reused) = (0, 0);
    let out = scratch();
    // A file stamped in the stat record's own clock tick is never vouched for.
    let tick = || std::thread::sleep(Duration::from_millis(20));
    for _ in 0..rounds {
        fresh.push(compile(scratch().path()).0);
        std::fs::write(&path, &original).unwrap();
        compile(out.path());
        tick();
        compile(out.path());
        tick();
        std::fs::write(&path, &edited).unwrap();
        let (t, w, r) = compile(out.path());
        (written, reused) = (w, r);
        edit.push(t);
        tick();
        std::fs::write(&path, &original).unwrap();
        back.push(compile(out.path()).0);
    }
    Edited { fresh: median_ms(fresh), edit: median_ms(edit), back: median_ms(back), written, reused }
}

/// The one-agent edit as a person sees it in `clawc compile --watch --format json`: the
/// edited pod saved (one `open`, `write`, `close`, as an editor that writes in place), then
/// the time until the watch prints that compile's summary, at a person's pace (half a
/// second apart), `2 × rounds` edits; against a fresh `clawc compile` into an empty
/// directory, spawned, `rounds` times (at least 7). Medians, ms.
fn watched(bin: &Path, services: usize, agent: usize, rounds: usize) -> (f64, f64) {
    use std::io::BufRead;
    let EditPod { pod, cache, path, original, edited } = EditPod::new(services, agent);
    let mut fresh = Vec::new();
    for _ in 0..rounds.max(7) {
        let into = scratch();
        let start = Instant::now();
        let o = std::process::Command::new(bin)
            .args(["compile", "--images", "none", "claw-pod.yml", "-o"])
            .arg(into.path())
            .current_dir(pod.path())
            .env("CLAWC_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        fresh.push(start.elapsed());
        assert!(o.status.success(), "clawc compile failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    let out = scratch();
    let mut child = std::process::Command::new(bin)
        .args(["compile", "--images", "none", "claw-pod.yml", "--format", "json", "--watch", "-o"])
        .arg(out.path())
        .current_dir(pod.path())
        .env("CLAWC_CACHE_DIR", cache.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut summary = || loop {
        let line = lines.next().expect("the watch printed a summary").unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if let Some(s) = v.get("summary") {
            assert_eq!(s["status"], "ok", "{s}");
            return;
        }
    };
    summary();
    let mut edit = Vec::new();
    for pod_text in std::iter::repeat_n([&edited, &original], rounds).flatten() {
        std::thread::sleep(Duration::from_millis(500));
        let start = Instant::now();
        std::fs::write(&path, pod_text).unwrap();
        summary();
        edit.push(start.elapsed());
    }
    let _ = child.kill();
    let _ = child.wait();
    (median_ms(fresh), median_ms(edit))
}

/// A generated pod of `services` agent services, its text and the text with the grant of
/// `agent-<agent>` narrowed by a tool, and a cache directory for its stat record and memo.
struct EditPod {
    pod: tempfile::TempDir,
    /// Not under `target/`: the pod's repository may not hold the record and the memo.
    cache: tempfile::TempDir,
    path: std::path::PathBuf,
    original: String,
    edited: String,
}

impl EditPod {
    fn new(services: usize, agent: usize) -> EditPod {
        let pod = scratch();
        generate(pod.path(), services);
        let path = pod.path().join("claw-pod.yml");
        let original = std::fs::read_to_string(&path).unwrap();
        let edited = generate::narrowed(&original, agent);
        EditPod { pod, cache: tempfile::tempdir().unwrap(), path, original, edited }
    }
}

/// The median of `times`, in ms.
fn median_ms(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1e3
}

/// The one-agent edit of [`edits`], but every compile in this one process, as a
/// long-lived compiler (a watch) would run it: no process start or exit, the allocator
/// and the page cache warm, the previous tree read ahead as `clawc compile` does. What
/// is left is what any recompile does again (parse, describe, grant, keys, the index,
/// the previous lock, the new lock and record), so this is the floor of a long-lived
/// process that keeps nothing from one compile to the next. Medians (ms) of `rounds`
/// fresh compiles into an empty directory and of `2 × rounds` edits (the grant narrowed
/// and put back in turn).
fn warm_edits(services: usize, agent: usize, rounds: usize) -> (f64, f64) {
    let EditPod { pod: _pod, cache, path, original, edited } = EditPod::new(services, agent);
    let compile = |out: &Path| {
        let opts = clawc::Options { pod: path.clone(), check_records: Some(cache.path().to_path_buf()), ..Default::default() };
        let start = Instant::now();
        let write = clawc::output::write::WriteOptions { records: Some(cache.path()), ..Default::default() };
        let summary = written(&opts, out, write, true);
        (start.elapsed(), summary)
    };
    let out = scratch();
    compile(out.path());
    let (mut fresh, mut edit) = (Vec::new(), Vec::new());
    let tick = || std::thread::sleep(Duration::from_millis(20));
    for _ in 0..rounds {
        fresh.push(compile(scratch().path()).0);
        for pod_text in [&edited, &original] {
            tick();
            std::fs::write(&path, pod_text).unwrap();
            let (took, summary) = compile(out.path());
            assert!(summary.reused + 1 == services, "an edit of agent-{agent} renders it alone: {}", summary.reused);
            edit.push(took);
        }
    }
    std::fs::write(&path, &original).unwrap();
    (median_ms(fresh), median_ms(edit))
}

/// The one-agent edit of [`edits`] at 3,000 agent ids on a busy machine (a spinning
/// thread per core, at normal priority), with the default threads (which read the
/// previous tree ahead on a thread of their own) and with `--jobs 1` (which do not), in
/// turn: the read-ahead must not make a busy machine's compile wait for it.
fn busy_edits(bin: &Path) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let spinning: Vec<_> = (0..cores)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let (mut default, mut single) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        default.push(edits(bin, 300, 7, 1, &[]).edit);
        single.push(edits(bin, 300, 7, 1, &["--jobs", "1"]).edit);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinning.into_iter().for_each(|t| t.join().unwrap());
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (d, s) = (median(default), median(single));
    println!(
        "one agent service's grant narrowed, {cores} cores kept busy: {d:.1} ms with the default threads, {s:.1} ms with --jobs 1 ({:.2})",
        d / s
    );
}

/// With `CLAWC_BIN` (a release `clawc`): the peak RSS of a fresh `clawc compile` and of a
/// recompile of the same pod, at 3,000, 10,200 and 30,000 agent ids; then at 30,000 agent
/// ids of the 3,000-id pod's 300 services (`count: 100`): the same plans, so what grows
/// from the first line is what a compile holds per agent id (the goal allows the plans).
fn peaks(bin: &Path) {
    let mut first = (0, 0);
    for (services, count) in [(300, COUNT), (1020, COUNT), (3000, COUNT), (300, 100)] {
        let (fresh, again) = peak_pair(bin, services, count);
        println!(
            "peak RSS, clawc compile  {:>6} agent ids: fresh {:>6.1} MB   recompile {:>6.1} MB{}",
            services * count,
            fresh as f64 / 1024.0,
            again as f64 / 1024.0,
            if count == COUNT { String::new() } else { format!("   ({services} services × {count})") }
        );
        if (services, count) == (300, COUNT) {
            first = (fresh, again);
        } else if services == 300 {
            let per_id = |now: i64, then: i64| (now - then) as f64 * 1024.0 / ((count - COUNT) * services) as f64;
            println!(
                "peak RSS per agent id, the plans fixed ({services} services, count {COUNT} → {count}): fresh {:.0} B   recompile {:.0} B",
                per_id(fresh, first.0),
                per_id(again, first.1)
            );
        }
    }
}

/// The peak RSS (KiB) of a fresh compile of a generated pod of `services × count` agent
/// ids, and of a recompile of it.
fn peak_pair(bin: &Path, services: usize, count: usize) -> (i64, i64) {
    let pod = scratch();
    generate_with(pod.path(), services, count);
    let out = scratch();
    let run = || {
        let child = std::process::Command::new(bin)
            .args(["compile", "--images", "none", "claw-pod.yml", "-o"])
            .arg(out.path())
            .current_dir(pod.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        peak_kib(child)
    };
    (run(), run())
}

/// Waits for `child` and returns its peak resident set (KiB), as `wait4` reports it.
fn peak_kib(child: std::process::Child) -> i64 {
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into the two locals above.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert!(pid > 0 && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "clawc compile failed");
    usage.ru_maxrss
}

/// The one-agent edit of [`warm_edits`] as `clawc compile --watch` runs it: after each
/// compile the tree is watched and read while idle ([`clawc::output::idle::Idle`]), the
/// descriptors each compile decoded are kept for the next ([`clawc::Decoded`]), and only
/// the compile after the edit is timed. Medians (ms) of `rounds` fresh compiles in
/// this process and of `2 × rounds` edits.
fn watch_edits(services: usize, agent: usize, rounds: usize) -> Watched {
    let EditPod { pod: _pod, cache, path, original, edited } = EditPod::new(services, agent);
    let fresh_opts = clawc::Options { pod: path.clone(), check_records: Some(cache.path().to_path_buf()), ..Default::default() };
    // What each compile keeps for the next, as the watch keeps it: the descriptors it
    // decoded, the input files it read (while a watch of them reports no change), the pod's
    // tree (to parse only the edited service's entry again) and the index.
    let opts = clawc::Options { kept: clawc::Kept::all(), ..fresh_opts.clone() };
    let write = || clawc::output::write::WriteOptions { records: Some(cache.path()), ..Default::default() };
    let out = scratch();
    let mut fresh = Vec::new();
    for _ in 0..rounds {
        let into = scratch(); // removed after the time is taken, as in the other lines
        let start = Instant::now();
        written(&fresh_opts, into.path(), write(), true);
        fresh.push(start.elapsed());
    }
    written(&opts, out.path(), write(), true);
    // Every input file the compile read is watched (the pod among them), as the watch does.
    let mut watch = opts.kept.reads.watch([], None);
    let (mut edit, mut whole) = (Vec::new(), Vec::new());
    for pod_text in std::iter::repeat_n([&edited, &original], rounds).flatten() {
        // Past the record's clock tick, as a person's next edit is.
        std::thread::sleep(Duration::from_millis(20));
        let idle = clawc::output::idle::Idle::prepare(out.path(), &write(), true).expect("the tree is read while idle");
        std::fs::write(&path, pod_text).unwrap();
        let start = Instant::now();
        opts.kept.reads.compiling(watch.as_mut());
        let mut writer = clawc::output::write::Writer::new(out.path(), write(), true);
        let unwatch = writer.read_idle(idle);
        assert!(unwatch.used, "nothing changed under --out");
        let (compiled, failed) = clawc::compile_into(&opts, &mut writer);
        assert!(compiled.exit_code() == 0 && failed.is_none(), "bench pod failed: {:?}", compiled.diagnostics.0.first());
        // The tree is whole and the watch reports it here; it stores the stat record and
        // the memo after.
        let (summary, keeping) = writer.finish_first(&compiled.secrets).unwrap();
        edit.push(start.elapsed());
        keeping.keep();
        whole.push(start.elapsed());
        drop(unwatch); // as the watch does, once the compile is reported
        watch = opts.kept.reads.watch([], watch.take());
        assert!(summary.reused + 1 >= services, "an edit of agent-{agent} renders it alone: {}", summary.reused);
    }
    std::fs::write(&path, &original).unwrap();
    Watched { fresh: median_ms(fresh), edit: median_ms(edit), whole: median_ms(whole) }
}

/// What [`watch_edits`] measured (medians, ms): a fresh compile, an edit up to its summary
/// (the tree written), and the edit with the stat record and the memo stored.
struct Watched {
    fresh: f64,
    edit: f64,
    whole: f64,
}
