//! The render memo (`output::memo`, keys in `project::reuse`): a recompile takes the files
//! of the agent services whose render key is unchanged from the tree instead of rendering
//! them. It must write exactly what a compile without the memo writes. Every golden case
//! that compiles is edited in ways that reach across services (an agent service removed,
//! every line moved, each line blanked, a descriptor changed) and compiled again with the
//! memo and, into a copy of the same tree, with `--no-cache`: the trees must be the same
//! bytes.

use super::harness::{clawc, tree};
use std::path::Path;

/// Past the kernel's coarse clock tick: a file stamped in the record's own tick is never
/// vouched for (racy git), so nothing could be reused.
fn tick() {
    std::thread::sleep(std::time::Duration::from_millis(20));
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).map(|s| s.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect()).unwrap_or_default()
}

/// A copy of a golden case, compiled with the memo (into `out`) or without (`--no-cache`).
struct Case {
    dir: tempfile::TempDir,
    cache: tempfile::TempDir,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// What a compile printed as its summary, and its exit code.
struct Compiled {
    code: i32,
    summary: serde_json::Value,
}

impl Case {
    fn new(case: &Path) -> Case {
        let dir = tempfile::tempdir().unwrap();
        for (rel, bytes) in tree(case) {
            if rel.starts_with("expected/") || rel == "args" || rel == "process-env" {
                continue;
            }
            let p = dir.path().join(&rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        let env =
            lines(&case.join("process-env")).iter().map(|kv| kv.split_once('=').unwrap()).map(|(k, v)| (k.into(), v.into())).collect();
        Case { dir, cache: tempfile::tempdir().unwrap(), args: lines(&case.join("args")), env }
    }

    fn compile(&self, out: &str, extra: &[&str]) -> Compiled {
        let mut c = clawc();
        c.current_dir(self.dir.path()).env("CLAWC_CACHE_DIR", self.cache.path());
        c.args(["compile", "claw-pod.yml", "-o", out, "--format", "json"]).args(&self.args).args(extra);
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        let o = c.output().unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let summary =
            stdout.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).find_map(|v| v.get("summary").cloned());
        Compiled { code: o.status.code().unwrap_or(-1), summary: summary.unwrap_or_default() }
    }

    fn pod(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("claw-pod.yml")).unwrap()
    }

    fn set_pod(&self, text: &str) {
        std::fs::write(self.dir.path().join("claw-pod.yml"), text).unwrap();
    }

    /// Compiles the pod as it is now into `out` with the memo, and into a copy of `out`
    /// without it, and asserts both wrote the same bytes; returns how many agent services
    /// the first took from the tree.
    fn same_as_without_memo(&self, what: &str) -> u64 {
        let copy = self.dir.path().join("fresh");
        let _ = std::fs::remove_dir_all(&copy);
        let cp = std::process::Command::new("cp").arg("-a").arg(self.dir.path().join("out")).arg(&copy).status().unwrap();
        assert!(cp.success());
        tick();
        let with = self.compile("out", &[]);
        let without = self.compile("fresh", &["--no-cache"]);
        assert_eq!(with.code, without.code, "{what}: exit codes");
        if with.code != 0 {
            return 0;
        }
        let (a, b) = (tree(&self.dir.path().join("out")), tree(&self.dir.path().join("fresh")));
        let differ: Vec<&String> = a.keys().chain(b.keys()).filter(|k| a.get(*k) != b.get(*k)).collect();
        assert!(differ.is_empty(), "{what}: the recompile with the memo wrote another tree than one without it; differing: {differ:?}");
        with.summary["reused"].as_u64().unwrap()
    }
}

/// The agent services of a compiled tree (from its report index).
fn agent_services(out: &Path) -> Vec<String> {
    let index: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let mut services: Vec<String> =
        index["agents"].as_array().unwrap().iter().map(|a| a["service"].as_str().unwrap().to_string()).collect();
    services.dedup();
    services
}

/// The pod without the block of service `name` (its key at two spaces under `services:`
/// and every line indented deeper after it).
fn without_service(pod: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = pod.lines().collect();
    let start = lines.iter().position(|l| l.trim_end() == format!("  {name}:"))?;
    let end = (start + 1..lines.len())
        .find(|&i| {
            let l = lines[i];
            !l.trim().is_empty() && !l.trim_start().starts_with('#') && l.len() - l.trim_start().len() <= 2
        })
        .unwrap_or(lines.len());
    Some([&lines[..start], &lines[end..]].concat().join("\n") + "\n")
}

#[test]
fn a_recompile_that_takes_services_from_the_tree_writes_what_a_compile_without_the_memo_writes() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut names: Vec<_> = std::fs::read_dir(&cases).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    // The cases on every core: each is hundreds of compiles.
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    let results: Vec<(u64, u64)> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..threads)
            .map(|t| {
                let (names, cases) = (&names, &cases);
                scope.spawn(move || names.iter().skip(t).step_by(threads).map(|name| edits_of(&cases.join(name), name)).collect::<Vec<_>>())
            })
            .collect();
        runs.into_iter().flat_map(|r| r.join().unwrap()).collect()
    });
    let compiled: u64 = results.iter().map(|r| r.0).sum();
    let reused: u64 = results.iter().map(|r| r.1).sum();
    assert!(compiled >= 10, "only {compiled} golden cases compiled");
    assert!(reused > 0, "no recompile took a service from the tree: the test proves nothing");
}

/// Runs the edits of one golden case: (1 if it compiled, services taken from the tree).
fn edits_of(dir: &Path, name: &str) -> (u64, u64) {
    let case = Case::new(dir);
    if case.compile("out", &[]).code != 0 {
        return (0, 0);
    }
    let mut reused = 0;
    let original = case.pod();
    let services = agent_services(&case.dir.path().join("out"));
    let mut edits = vec![(format!("{name}: every line moved down"), format!("# moved\n{original}"))];
    for s in &services {
        edits.extend(without_service(&original, s).map(|p| (format!("{name}: agent service {s} removed"), p)));
    }
    for (what, pod) in edits {
        case.set_pod(&pod);
        reused += case.same_as_without_memo(&what);
        case.set_pod(&original);
        reused += case.same_as_without_memo(&format!("{what}, then put back"));
    }
    // Every line of the pod blanked in turn (a grant, a default, a port, a feed, a
    // surface, a count...; blanked, not removed, so no other line moves), each compile
    // after the last: what still compiles must be what a compile without the memo writes.
    for i in 0..original.lines().count() {
        let pod: Vec<&str> = original.lines().enumerate().map(|(n, l)| if n == i { "" } else { l }).collect();
        case.set_pod(&(pod.join("\n") + "\n"));
        reused += case.same_as_without_memo(&format!("{name}: line {} blanked", i + 1));
    }
    case.set_pod(&original);
    reused += case.same_as_without_memo(&format!("{name}: put back"));
    // A description changed in each descriptor (what the registry holds).
    for (rel, bytes) in tree(case.dir.path()) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if rel.starts_with("out/") || rel.starts_with("fresh/") || !text.contains("\"description\": \"") {
            continue;
        }
        let path = case.dir.path().join(&rel);
        std::fs::write(&path, text.replacen("\"description\": \"", "\"description\": \"Changed: ", 1)).unwrap();
        reused += case.same_as_without_memo(&format!("{name}: a description in {rel} changed"));
        std::fs::write(&path, &bytes).unwrap();
        reused += case.same_as_without_memo(&format!("{name}: {rel} put back"));
    }
    (1, reused)
}
