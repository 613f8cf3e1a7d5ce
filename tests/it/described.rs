//! What a compile keeps in the user cache for the next run of the pod: its descriptors
//! decoded (`describe/v1`), its YAML tree and `report.json`'s index (`pod/v1`). A compile that takes them from
//! there says and writes exactly what one that decodes and parses everything does.

use super::harness::{Pod, clawc, http_descriptor, on_every_golden_case, tree};
use std::path::{Path, PathBuf};

/// `clawc compile claw-pod.yml -o OUT --format json` with the case's own arguments and
/// environment, its caches in `cache`: (exit code, stdout, stderr).
fn compile(case: &super::reuse::Case, cache: &Path, out: &str, extra: &[&str]) -> (i32, String, String) {
    let mut c = clawc();
    c.current_dir(case.dir.path()).env("CLAWC_CACHE_DIR", cache);
    c.args(["compile", "claw-pod.yml", "-o", out, "--format", "json"]).args(&case.args).args(extra);
    c.envs(case.env.iter().map(|(k, v)| (k, v)));
    let o = c.output().unwrap();
    // The same words whatever `--out` is called.
    let text = |b: &[u8]| String::from_utf8_lossy(b).replace(out, "OUT");
    (o.status.code().unwrap_or(-1), text(&o.stdout), text(&o.stderr))
}

/// The one file of the descriptor cache under `cache`, if any.
fn cache_file(cache: &Path) -> Option<PathBuf> {
    let dir = cache.join("describe/v1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).ok()?.map(|e| e.unwrap().path()).collect();
    assert!(files.len() <= 1, "one file per pod: {files:?}");
    files.pop()
}

fn stamp(p: &Path) -> (u64, i64, i64) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(p).unwrap();
    (m.ino(), m.mtime(), m.mtime_nsec())
}

/// Every golden case (errors and warnings included), compiled into a new `--out` twice
/// with one cache: the second takes every descriptor from the cache (its file is not
/// written again, so nothing was decoded anew) and prints and writes what the first, and
/// one with `--no-cache`, print and write, byte for byte.
#[test]
fn descriptors_taken_from_the_cache_compile_as_decoded_ones() {
    let outcomes = on_every_golden_case(|case, name| {
        let case = super::reuse::Case::new(case);
        let cache = case.cache.path();
        let first = compile(&case, cache, "out-first", &[]);
        let kept = cache_file(cache).map(|f| (stamp(&f), f));
        let second = compile(&case, cache, "out-second", &[]);
        let plain = compile(&case, cache, "out-plain", &["--no-cache"]);
        let trees: Vec<_> = ["out-first", "out-second", "out-plain"].iter().map(|o| tree(&case.dir.path().join(o))).collect();
        let mut failures = Vec::new();
        if first != second || first != plain {
            failures.push(format!("{name}: printed\n{first:?}\n{second:?}\n{plain:?}"));
        }
        if trees[0] != trees[1] || trees[0] != trees[2] {
            failures.push(format!("{name}: the trees differ"));
        }
        if let Some((before, file)) = &kept
            && stamp(file) != *before
        {
            failures.push(format!("{name}: the cache was written again"));
        }
        (failures, kept.is_some())
    });
    let failures: Vec<String> = outcomes.iter().flat_map(|(f, _)| f.clone()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let cached = outcomes.iter().filter(|(_, kept)| *kept).count();
    assert!(cached >= 20, "only {cached} cases kept descriptors");
}

/// A descriptor edited between compiles is decoded again, and its diagnostics are said
/// each time: nothing with a diagnostic is kept; what the cache holds is only what the
/// last compile used.
#[test]
fn an_edited_descriptor_is_decoded_again_and_its_warnings_said_every_time() {
    let pod = Pod::new("services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &http_descriptor(&["a", "b"]));
    let cache = tempfile::tempdir().unwrap();
    let run = || {
        let o = clawc()
            .current_dir(pod.dir.path())
            .env("CLAWC_CACHE_DIR", cache.path())
            .args(["compile", "--format", "json"])
            .output()
            .unwrap();
        (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let (code, _) = run();
    assert_eq!(code, 0);
    let file = cache_file(cache.path()).expect("kept");
    let one = std::fs::read(&file).unwrap();
    // An edit: decoded again, and the cache then holds the new text's outcome alone.
    std::fs::write(pod.path("api/.claw-describe.json"), http_descriptor(&["a", "c"])).unwrap();
    let (code, out) = run();
    assert_eq!(code, 0, "{out}");
    let two = std::fs::read(&file).unwrap();
    assert_ne!(one, two, "written again");
    assert!(pod.read(".claw-compiled/context/bot/tools.json").contains("does c"), "the edit compiled");
    // A descriptor with an error: reported on every compile, never kept.
    std::fs::write(pod.path("api/.claw-describe.json"), "{\"version\": 3}").unwrap();
    for _ in 0..2 {
        let (code, out) = run();
        assert_eq!(code, 2, "{out}");
        assert!(out.contains("clawc::describe::version"), "{out}");
    }
}

/// A cache directory in the repository under review is neither read nor written: its
/// author could write it.
#[test]
fn no_descriptor_is_kept_in_the_repository() {
    let pod = Pod::new("services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &http_descriptor(&["a"]));
    for inside in [".cache", ".claw-compiled/.cache"] {
        let cache = pod.path(inside);
        for _ in 0..2 {
            let o = clawc().current_dir(pod.dir.path()).env("CLAWC_CACHE_DIR", &cache).args(["compile"]).output().unwrap();
            assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        }
        assert!(!cache.exists(), "a cache was written under {inside}");
    }
}

/// Every golden case, each line of its pod blanked in turn and then a character added to
/// it, each edit compiled after the last with the pod's tree from the cache (spliced where
/// the edit lies inside one service's entry) and with `--no-cache` (parsed whole): the
/// same exit code, the same diagnostics to the column, the same tree.
#[test]
fn a_pod_tree_kept_between_runs_compiles_as_a_whole_parse() {
    let outcomes = on_every_golden_case(|case, name| {
        let case = super::reuse::Case::new(case);
        let cache = case.cache.path();
        compile(&case, cache, "out-kept", &[]);
        compile(&case, cache, "out-whole", &["--no-cache"]);
        let stored = cache.join("pod/v1").read_dir().is_ok_and(|mut d| d.next().is_some());
        let pod = case.dir.path().join("claw-pod.yml");
        let original = std::fs::read_to_string(&pod).unwrap();
        let lines: Vec<&str> = original.lines().collect();
        let mut failures = Vec::new();
        for i in 0..lines.len() {
            for edit in [String::new(), format!("{}x", lines[i])] {
                let text: Vec<&str> = lines.iter().enumerate().map(|(n, l)| if n == i { edit.as_str() } else { l }).collect();
                std::fs::write(&pod, text.join("\n") + "\n").unwrap();
                // (`reused` aside: only the run with the cache has a render memo.)
                let kept = without_reused(compile(&case, cache, "out-kept", &[]));
                let whole = without_reused(compile(&case, cache, "out-whole", &["--no-cache"]));
                let same_tree = tree(&case.dir.path().join("out-kept")) == tree(&case.dir.path().join("out-whole"));
                if kept != whole || (kept.0 == 0 && !same_tree) {
                    failures.push(format!("{name}, line {} as {edit:?}:\n{kept:?}\n{whole:?}", i + 1));
                }
            }
        }
        (failures, stored)
    });
    let failures: Vec<String> = outcomes.iter().flat_map(|(f, _)| f.clone()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(outcomes.iter().filter(|(_, stored)| *stored).count() >= 20, "the cases kept no tree");
}

/// A compile's outcome with its JSON summary's `reused` left out.
fn without_reused((code, stdout, stderr): (i32, String, String)) -> (i32, Vec<serde_json::Value>, String) {
    let mut lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for l in &mut lines {
        if let Some(s) = l.get_mut("summary").and_then(serde_json::Value::as_object_mut) {
            s.remove("reused");
        }
    }
    (code, lines, stderr)
}

/// `report.json`'s index is kept beside the pod's tree (`pod/v1/<pod>.index`) for the
/// next run: an edit that leaves what it lists alone (a grant) takes it without writing
/// it again; an edit that changes what it lists (a warning) renders it anew; a damaged
/// file is never taken. Each tree is the one a `--no-cache` compile writes.
#[test]
fn the_index_kept_between_runs_is_taken_only_for_the_same_inputs() {
    let pod = Pod::new(
        "services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools:\n        - service: api\n          allow: [a, b]\n  api:\n    build: ./api\n",
    )
    .file("api/.claw-describe.json", &http_descriptor(&["a", "b"]));
    let cache = tempfile::tempdir().unwrap();
    let run = |out: &str, extra: &[&str]| {
        let o = clawc()
            .current_dir(pod.dir.path())
            .env("CLAWC_CACHE_DIR", cache.path())
            .args(["compile", "claw-pod.yml", "-o", out])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        tree(&pod.path(out))
    };
    let same_as_whole = || assert_eq!(run("out", &[]), run("out-whole", &["--no-cache"]));
    same_as_whole();
    let index = || {
        let files: Vec<PathBuf> = std::fs::read_dir(cache.path().join("pod/v1"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "index"))
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    };
    let kept = stamp(&index());
    pod.edit_pod("allow: [a, b]", "allow: [a]");
    same_as_whole();
    assert_eq!(stamp(&index()), kept, "a grant changed the index's inputs");
    // Two agent ids where there was one: the index lists each.
    let before = pod.read("out/report.json");
    pod.edit_pod("cllama: passthrough\n", "cllama: passthrough\n      count: 2\n");
    same_as_whole();
    assert_ne!(stamp(&index()), kept, "the index was not rendered again for new agent ids");
    assert_ne!(pod.read("out/report.json"), before);
    // A damaged file (a byte of the index flipped) is rendered anew, not taken.
    let at = index();
    let mut bytes = std::fs::read(&at).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&at, &bytes).unwrap();
    pod.edit_pod("count: 2", "count: 3");
    same_as_whole();
    assert!(pod.read("out/report.json").contains("bot-2"), "{}", pod.read("out/report.json"));
}
