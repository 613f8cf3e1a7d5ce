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
pub(crate) struct Case {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) cache: tempfile::TempDir,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
}

/// What a compile printed as its summary, and its exit code.
struct Compiled {
    code: i32,
    summary: serde_json::Value,
}

impl Case {
    pub(crate) fn new(case: &Path) -> Case {
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
    let results: Vec<(u64, u64)> = super::harness::on_every_golden_case(edits_of);
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

/// Three agent services granted tools of one service; `b`'s grant is edited below.
fn three_agents() -> super::harness::Pod {
    let agent = |name: &str, allow: &str, count: u32| {
        format!(
            "  {name}:\n    image: {name}\n    x-claw:\n      cllama: passthrough\n      count: {count}\n      tools:\n        - service: api\n          allow: [{allow}]\n"
        )
    };
    let pod = format!("services:\n  api:\n    build: ./api\n{}{}{}", agent("a", "x, y", 2), agent("b", "x, y", 1), agent("c", "y", 3));
    super::harness::Pod::new(&pod).file("api/.claw-describe.json", &super::harness::http_descriptor(&["x", "y"]))
}

/// Compiles `pod` twice, a clock tick apart, and waits another: files written in the same
/// tick as the stat record is kept are never vouched for (racy git), so it is the second
/// compile's record, which found them current, that lets the next one take them.
fn settled(pod: &super::harness::Pod, env: &[(&str, &str)]) {
    assert_eq!(pod.run_with_env(&[], env).code, 0);
    tick();
    assert_eq!(pod.run_with_env(&[], env).code, 0);
    tick();
}

/// [`three_agents`] [`settled`], with the directory of its record and memo.
fn settled_three_agents() -> (super::harness::Pod, tempfile::TempDir) {
    let (pod, cache) = (three_agents(), tempfile::tempdir().unwrap());
    settled(&pod, &cached(&cache));
    (pod, cache)
}

/// Makes the lock's mode one clawc does not write, so the next compile compiles (it puts
/// the mode back; one with nothing to write answers from the lock and never looks at the
/// memo) and writes the lock again, with the same bytes: the memo is still for it.
fn lock_mode_changed(pod: &super::harness::Pod) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(pod.path("out/clawc.lock"), std::fs::Permissions::from_mode(0o600)).unwrap();
    tick();
}

/// The environment of a compile that keeps its record and memo in `cache`.
fn cached(cache: &tempfile::TempDir) -> [(&'static str, &str); 2] {
    [("CLAWC_CACHE_DIR", cache.path().to_str().unwrap()), ("CLAWC_IMAGES", "none")]
}

fn summary(run: &super::harness::Run) -> serde_json::Value {
    let line = run.stdout.lines().find(|l| l.contains("\"summary\"")).unwrap_or_else(|| panic!("no summary: {}", run.stdout));
    serde_json::from_str::<serde_json::Value>(line).unwrap()["summary"].clone()
}

#[test]
fn one_agent_services_grant_changed_renders_and_writes_only_that_service() {
    let (pod, cache) = (three_agents(), tempfile::tempdir().unwrap());
    let env = cached(&cache);
    let first = summary(&pod.run_with_env(&[], &env));
    assert_eq!(first["reused"], 0, "nothing to take from on the first compile");
    settled(&pod, &env);
    let again = summary(&pod.run_with_env(&[], &env));
    assert_eq!((again["reused"].as_u64(), again["written"].as_array().map(Vec::len)), (Some(3), Some(0)), "{again}");
    pod.edit_pod("  b:\n    image: b\n    x-claw:\n      cllama: passthrough\n      count: 1\n      tools:\n        - service: api\n          allow: [x, y]", "  b:\n    image: b\n    x-claw:\n      cllama: passthrough\n      count: 1\n      tools:\n        - service: api\n          allow: [x]");
    tick();
    let edited = summary(&pod.run_with_env(&[], &env));
    assert_eq!(edited["reused"], 2, "a and c are taken from the tree: {edited}");
    let written: Vec<&str> = edited["written"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert_eq!(
        written,
        ["clawc.lock", "context/b/CLAWDAPUS.md", "context/b/tools.json", "report/b.json"],
        "only b's files and the lock change"
    );
    // And what was written is what a compile without the memo writes.
    let fresh = clawc().current_dir(pod.dir.path()).envs(env).args(["compile", "-o", "fresh", "--no-cache"]).status().unwrap();
    assert!(fresh.success());
    assert_eq!(tree(&pod.path("out")), tree(&pod.path("fresh")));
}

/// The keys are computed on every core in runs of services: a compile on one thread
/// takes every service a compile on two rendered, and the other way round.
#[test]
fn the_keys_are_the_same_whatever_the_thread_count() {
    let services: String = (0..40)
        .map(|i| format!("  a{i}:\n    image: a\n    x-claw:\n      cllama: passthrough\n      tools:\n        - service: api\n          allow: [x]\n"))
        .collect();
    let pod = super::harness::Pod::new(&format!("services:\n  api:\n    build: ./api\n{services}"))
        .file("api/.claw-describe.json", &super::harness::http_descriptor(&["x", "y"]));
    let cache = tempfile::tempdir().unwrap();
    let env = cached(&cache);
    for jobs in ["1", "2", "1"] {
        let run = pod.run_with_env(&["--jobs", jobs], &env);
        assert_eq!(run.code, 0, "{}", run.stdout);
        tick();
    }
    for jobs in ["2", "1"] {
        let again = summary(&pod.run_with_env(&["--jobs", jobs], &env));
        assert_eq!(again["reused"], 40, "--jobs {jobs}: {again}");
        tick();
    }
}

/// Only a file the stat record still vouches for is taken: a file of a service whose key
/// is unchanged, edited behind clawc's back (even to the same size and time), makes that
/// service render again, and the file is put back. (Two services with a file forged, the
/// first at its first file: what is looked at for one is never taken for the next.) The
/// same whether the tree was read ahead while the inputs were compiled (`--jobs 2`) or
/// looked at after (`--jobs 1`).
#[test]
fn a_service_whose_file_was_edited_behind_clawcs_back_is_rendered_again() {
    for jobs in ["2", "1"] {
        let (pod, cache) = settled_three_agents();
        let env = cached(&cache);
        let before = tree(&pod.path("out"));
        super::harness::forge(&pod.path("out/context/c-1/tools.json"), false);
        tick();
        let after = summary(&pod.run_with_env(&["--jobs", jobs], &env));
        assert_eq!(after["reused"], 2, "--jobs {jobs}: {after}");
        assert_eq!(after["written"], serde_json::json!(["context/c-1/tools.json"]), "--jobs {jobs}");
        assert_eq!(tree(&pod.path("out")), before, "--jobs {jobs}");
        settled(&pod, &env);
        super::harness::forge(&pod.path("out/context/a-0/CLAWDAPUS.md"), false);
        super::harness::forge(&pod.path("out/context/b/tools.json"), true);
        tick();
        let after = summary(&pod.run_with_env(&["--jobs", jobs], &env));
        assert_eq!(after["reused"], 1, "--jobs {jobs}: {after}");
        assert_eq!(after["written"], serde_json::json!(["context/a-0/CLAWDAPUS.md", "context/b/tools.json"]), "--jobs {jobs}");
        assert_eq!(tree(&pod.path("out")), before, "--jobs {jobs}");
    }
}

/// The memo lives in the user cache and is bound to the lock it was kept with: one kept
/// for another lock, garbled, naming paths outside the tree, or a symlink is ignored, and
/// a memo is never read or written inside the repository under review.
#[test]
fn a_memo_for_another_lock_garbled_or_naming_foreign_paths_is_ignored() {
    let (pod, cache) = (three_agents(), tempfile::tempdir().unwrap());
    let env = cached(&cache);
    settled(&pod, &env);
    let memos: Vec<std::path::PathBuf> = std::fs::read_dir(cache.path().join("check/v1"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "memo"))
        .collect();
    assert_eq!(memos.len(), 1);
    let kept = std::fs::read(&memos[0]).unwrap();
    lock_mode_changed(&pod);
    let s = summary(&pod.run_with_env(&[], &env));
    assert_eq!((s["reused"].as_u64(), s["written"].as_array().map(Vec::len)), (Some(3), Some(1)), "the memo as kept is used: {s}");
    let want = tree(&pod.path("out"));
    let mut garbled = kept.clone();
    let at = garbled.len() / 2;
    garbled[at] ^= 1;
    // A path outside the tree in place of one of a's files (of the same length, with the
    // checksum made good).
    let mut foreign = kept[..kept.len() - 4].to_vec();
    let at = foreign.windows(22).position(|w| w == b"context/a-0/tools.json").unwrap();
    foreign[at..at + 22].copy_from_slice(b"../../../../etc/passwd");
    let sum = crc32fast::hash(&foreign);
    foreign.extend_from_slice(&sum.to_le_bytes());
    for (what, bytes) in [("garbled", garbled), ("foreign", foreign)] {
        std::fs::write(&memos[0], &bytes).unwrap();
        lock_mode_changed(&pod);
        let s = summary(&pod.run_with_env(&[], &env));
        assert_eq!(s["reused"], if what == "garbled" { 0 } else { 2 }, "{what}: only a's files are not taken: {s}");
        assert_eq!(tree(&pod.path("out")).len(), want.len(), "{what}");
        assert!(
            tree(&pod.path("out")).iter().filter(|(p, _)| *p != "clawc.lock").eq(want.iter().filter(|(p, _)| *p != "clawc.lock")),
            "{what}"
        );
    }
    // The memo kept with the lock before b's grant changed, put back after the change was
    // compiled: it is for another lock.
    pod.edit_pod("allow: [x, y]\n  c:", "allow: [x]\n  c:");
    settled(&pod, &env);
    std::fs::write(&memos[0], &kept).unwrap();
    lock_mode_changed(&pod);
    let s = summary(&pod.run_with_env(&[], &env));
    assert_eq!((s["reused"].as_u64(), s["written"].as_array().map(Vec::len)), (Some(0), Some(1)), "{s}");
    // A memo that is a symlink (to a memo that would be taken) is not followed, and the
    // compile replaces the link with a file of its own.
    settled(&pod, &env);
    let real = cache.path().join("elsewhere.memo");
    std::fs::rename(&memos[0], &real).unwrap();
    std::os::unix::fs::symlink(&real, &memos[0]).unwrap();
    lock_mode_changed(&pod);
    let s = summary(&pod.run_with_env(&[], &env));
    assert_eq!(s["reused"], 0, "{s}");
    assert!(!std::fs::symlink_metadata(&memos[0]).unwrap().file_type().is_symlink(), "the link was replaced");
    // A cache inside the repository under review holds no record and no memo.
    let inside = pod.path("cache");
    let env = [("CLAWC_CACHE_DIR", inside.to_str().unwrap()), ("CLAWC_IMAGES", "none")];
    assert!(clawc().current_dir(pod.dir.path()).envs(env).args(["compile", "-o", "elsewhere"]).status().unwrap().success());
    assert!(!inside.exists(), "nothing kept in the repository");
}

/// A memo that is a FIFO is neither waited on nor read: the compile renders every
/// service, writes what it would have written, and replaces the FIFO with a memo.
#[test]
fn a_memo_that_is_a_fifo_does_not_hang_the_compile() {
    let (pod, cache) = (three_agents(), tempfile::tempdir().unwrap());
    let env = cached(&cache);
    settled(&pod, &env);
    let memo = std::fs::read_dir(cache.path().join("check/v1"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "memo"))
        .unwrap();
    let want = tree(&pod.path("out"));
    std::fs::remove_file(&memo).unwrap();
    super::hostile::mkfifo(&memo);
    lock_mode_changed(&pod);
    let s = summary(&pod.run_with_env(&[], &env));
    assert_eq!((s["reused"].as_u64(), s["written"].as_array().map(Vec::len)), (Some(0), Some(1)), "{s}");
    assert_eq!(tree(&pod.path("out")).len(), want.len());
    assert!(tree(&pod.path("out")).iter().filter(|(p, _)| *p != "clawc.lock").eq(want.iter().filter(|(p, _)| *p != "clawc.lock")));
    assert!(std::fs::symlink_metadata(&memo).unwrap().is_file(), "the FIFO was replaced by a memo");
}

/// A directory of a service that would be taken, swapped for a symlink to a copy of
/// itself: nothing is taken through it, and the write refuses it as it always has.
#[test]
fn a_service_directory_swapped_for_a_symlink_is_not_taken_through() {
    let (pod, cache) = (three_agents(), tempfile::tempdir().unwrap());
    let env = cached(&cache);
    settled(&pod, &env);
    swapped_directory_is_refused(&pod, &env);
}

/// Swaps `context/c-1` for a symlink to a copy of itself; the next compile must refuse it
/// and write nothing.
fn swapped_directory_is_refused(pod: &super::harness::Pod, env: &[(&str, &str)]) {
    let dir = pod.path("out/context/c-1");
    let copy = pod.path("c-1-copy");
    let cp = std::process::Command::new("cp").arg("-a").arg(&dir).arg(&copy).status().unwrap();
    assert!(cp.success());
    std::fs::remove_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&copy, &dir).unwrap();
    let before = tree(&pod.path("out"));
    let run = pod.run_with_env(&[], env);
    assert_eq!(run.code, 3, "{}", run.stdout);
    assert!(run.stdout.contains("clawc::output::not_a_directory"), "{}", run.stdout);
    assert_eq!(tree(&pod.path("out")), before, "nothing written");
}

/// The same after a recompile that wrote a file: its record vouches for `context`, which
/// it left as it found it, so the next write takes the services' directories in it as
/// real without an `lstat` each while that stamp holds. Swapping one for a symlink changes
/// it, so the swap is still seen.
#[test]
fn a_service_directory_swapped_after_its_parent_was_recorded_unchanged_is_not_taken_through() {
    let (pod, cache) = (three_agents(), tempfile::tempdir().unwrap());
    let env = cached(&cache);
    settled(&pod, &env);
    std::fs::write(pod.path("out/context/a-0/tools.json"), "edited behind clawc's back").unwrap();
    let run = pod.run_with_env(&[], &env);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(summary(&run)["written"], serde_json::json!(["context/a-0/tools.json"]), "{}", run.stdout);
    tick();
    swapped_directory_is_refused(&pod, &env);
}

/// A token whose value changes to text an output already holds is found by the leak scan
/// on the recompile: the memo never lets a service skip the scan under new token values.
#[test]
fn a_token_changed_to_text_a_kept_output_holds_is_still_refused_as_a_leak() {
    let desc = super::harness::http_descriptor(&["t"]).replace(
        "\"description\":\"svc\"",
        "\"description\":\"token s3cr3t-token-value\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}",
    );
    let pod = super::harness::Pod::new("services:\n  bot:\n    environment:\n      API_TOKEN: ${API_TOKEN}\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n      surfaces: [service://api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &desc)
        .file(".env", "API_TOKEN=another-token-value\n");
    let cache = tempfile::tempdir().unwrap();
    let env = cached(&cache);
    settled(&pod, &env);
    assert_eq!(summary(&pod.run_with_env(&[], &env))["reused"], 1, "the memo is in use");
    let before = tree(&pod.path("out"));
    std::fs::write(pod.path(".env"), "API_TOKEN=s3cr3t-token-value\n").unwrap();
    let run = pod.run_with_env(&[], &env);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_error("clawc::secrets::leak", "secret value of API_TOKEN would be written to `context/bot/CLAWDAPUS.md`");
    assert!(!run.stdout.contains("s3cr3t-token-value") && !run.stderr.contains("s3cr3t-token-value"));
    assert_eq!(tree(&pod.path("out")), before, "nothing written");
}

/// The previous lock's `inputs` only tell the read-ahead when to stop looking at the tree
/// (their digest against the inputs this compile read); they are never read as paths and
/// never vouch for a file. A committed lock whose inputs are forged (naming files outside
/// the repository, of the wrong type, enormous, or copied from the true lock while a file
/// was edited behind clawc's back) leaves the tree exactly as a compile without the memo
/// writes it, with the edited file put back, on one thread and on two.
#[test]
fn a_previous_lock_with_forged_inputs_only_steers_the_read_ahead() {
    let huge = "a/".repeat(1 << 19);
    let forgeries = [
        serde_json::json!([{ "path": "../../../../etc/passwd", "role": "descriptor", "sha256": "0".repeat(64) }]),
        serde_json::json!(7),
        serde_json::json!([{ "path": huge, "role": "snapshot", "sha256": null }, { "role": 3 }]),
        serde_json::Value::Null,
    ];
    for jobs in ["2", "1"] {
        let (pod, cache) = settled_three_agents();
        let env = cached(&cache);
        let want = tree(&pod.path("out"));
        let lock_path = pod.path("out/clawc.lock");
        let true_lock: serde_json::Value = serde_json::from_slice(&std::fs::read(&lock_path).unwrap()).unwrap();
        // The true inputs, with a file edited to the same size and time: the digest says
        // "the same inputs", and the read-ahead keeps looking, but the record does not
        // vouch for the edited file.
        let copied = true_lock["inputs"].clone();
        for (i, inputs) in forgeries.iter().chain([&copied]).enumerate() {
            let mut lock = true_lock.clone();
            lock["inputs"] = inputs.clone();
            std::fs::write(&lock_path, serde_json::to_vec_pretty(&lock).unwrap()).unwrap();
            super::harness::forge(&pod.path("out/context/a-0/tools.json"), i % 2 == 0);
            tick();
            let run = pod.run_with_env(&["--jobs", jobs], &env);
            assert_eq!(run.code, 0, "--jobs {jobs}, forgery {i}: {}", run.stdout);
            let written = summary(&run)["written"].clone();
            assert!(
                written.as_array().unwrap().contains(&serde_json::json!("context/a-0/tools.json")),
                "--jobs {jobs}, forgery {i}: {written}"
            );
            assert_eq!(tree(&pod.path("out")), want, "--jobs {jobs}, forgery {i}");
            settled(&pod, &env);
        }
    }
}

/// A recompile whose lock is the one already in `--out` writes nothing (it takes the lock
/// as current by its digest and the stamp it was read with, without reading it again;
/// `output::write::tests` holds the stamp to edits after the read), and a lock edited
/// behind clawc's back (to the same size and modification time, or replaced) is written
/// again, with nothing else changed.
#[test]
fn a_lock_edited_behind_clawcs_back_is_written_again() {
    for (jobs, replace) in [("2", false), ("2", true), ("1", false)] {
        let (pod, cache) = settled_three_agents();
        let env = cached(&cache);
        let want = tree(&pod.path("out"));
        let again = summary(&pod.run_with_env(&["--jobs", jobs], &env));
        assert_eq!(again["written"], serde_json::json!([]), "--jobs {jobs}: an unchanged lock is not written: {again}");
        tick();
        super::harness::forge(&pod.path("out/clawc.lock"), replace);
        tick();
        let after = summary(&pod.run_with_env(&["--jobs", jobs], &env));
        assert_eq!(after["written"], serde_json::json!(["clawc.lock"]), "--jobs {jobs}, replaced {replace}: {after}");
        assert_eq!(tree(&pod.path("out")), want, "--jobs {jobs}, replaced {replace}");
    }
}

/// The lock in `--out` is read (with its stamp) by the read-ahead and by the write: one
/// that is a FIFO or a symlink to a file outside the tree is never opened for reading
/// nor followed, on two threads or one. The compile ends (no hang), puts a regular lock
/// of the true bytes in its place, writes nothing through the link, and leaves the tree
/// as a compile without the memo writes it.
#[test]
fn a_lock_that_is_a_fifo_or_a_symlink_is_neither_read_nor_followed() {
    for (jobs, kind) in [("2", "fifo"), ("1", "fifo"), ("2", "symlink"), ("1", "symlink")] {
        let (pod, cache) = settled_three_agents();
        let env = cached(&cache);
        let want = tree(&pod.path("out"));
        let outside = pod.path("outside.lock");
        std::fs::write(&outside, "OUTSIDE").unwrap();
        std::fs::remove_file(pod.path("out/clawc.lock")).unwrap();
        if kind == "fifo" {
            let c = std::ffi::CString::new(pod.path("out/clawc.lock").to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        } else {
            std::os::unix::fs::symlink(&outside, pod.path("out/clawc.lock")).unwrap();
        }
        let run = pod.run_with_env(&["--jobs", jobs], &env);
        assert_eq!(run.code, 0, "--jobs {jobs}, {kind}: {}", run.stdout);
        let s = summary(&run);
        // No lock was read, so no record or memo is bound to one: nothing is taken unread.
        assert_eq!((s["reused"].as_u64(), &s["written"]), (Some(0), &serde_json::json!(["clawc.lock"])), "--jobs {jobs}, {kind}: {s}");
        assert_eq!(std::fs::read(&outside).unwrap(), b"OUTSIDE", "--jobs {jobs}, {kind}: the outside file is untouched");
        assert!(std::fs::symlink_metadata(pod.path("out/clawc.lock")).unwrap().is_file(), "--jobs {jobs}, {kind}");
        assert_eq!(tree(&pod.path("out")), want, "--jobs {jobs}, {kind}");
    }
}

/// The new lock is written as it is made, not held, and decided as any file is: a
/// directory in its place (not clawc's, never emptied) stops the write before anything
/// changes, and a lock of the true bytes with another mode is written again, whether the
/// read-ahead read it or not.
#[test]
fn a_lock_that_is_a_directory_is_refused_and_one_with_another_mode_is_written_again() {
    use std::os::unix::fs::PermissionsExt;
    for jobs in ["2", "1"] {
        let (pod, cache) = settled_three_agents();
        let env = cached(&cache);
        let want = tree(&pod.path("out"));
        let lock = pod.path("out/clawc.lock");
        std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o600)).unwrap();
        tick();
        let again = summary(&pod.run_with_env(&["--jobs", jobs], &env));
        assert_eq!(again["written"], serde_json::json!(["clawc.lock"]), "--jobs {jobs}: {again}");
        assert_eq!(std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777, 0o644, "--jobs {jobs}");
        assert_eq!(tree(&pod.path("out")), want, "--jobs {jobs}");

        std::fs::remove_file(&lock).unwrap();
        std::fs::create_dir(&lock).unwrap();
        std::fs::write(lock.join("mine"), "MINE").unwrap();
        let before = tree(&pod.path("out"));
        let run = pod.run_with_env(&["--jobs", jobs], &env);
        assert_eq!(run.code, 3, "--jobs {jobs}: {}", run.stderr);
        assert!(run.stdout.contains("clawc.lock") && run.stdout.contains("a directory"), "--jobs {jobs}: {}", run.stdout);
        assert_eq!(tree(&pod.path("out")), before, "--jobs {jobs}: nothing changed");
        assert_eq!(std::fs::read(lock.join("mine")).unwrap(), b"MINE");
        assert!(!pod.path("out/.clawc-stage").exists(), "--jobs {jobs}: no staging left");
    }
}
