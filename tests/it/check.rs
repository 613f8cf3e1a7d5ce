//! `compile --check` and `clawc.lock`: drift detection without writing, the lock fast
//! path, and committed secrets.

use super::harness::{Pod, forge, http_descriptor, tree};

fn pod() -> Pod {
    let desc = http_descriptor(&["a", "b"])
        .replace("\"description\":\"svc\"", "\"description\":\"svc\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}");
    Pod::new("services:\n  bot:\n    environment: {API_TOKEN: \"${API_TOKEN}\"}\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n      feeds:\n        - source: api\n          path: /f/${REGION:-eu}\n          ttl: 5\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &desc)
        .file(".env", "API_TOKEN=tok-secret-0123456789\n")
}

fn check_json(pod: &Pod, extra: &[&str]) -> (i32, serde_json::Value) {
    check_json_env(pod, extra, &[("CLAWC_IMAGES", "none")])
}

#[test]
fn in_sync_is_answered_from_the_lock() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    let (code, doc) = check_json(&pod, &[]);
    assert_eq!((code, doc["status"].as_str(), doc["answered_by"].as_str()), (0, Some("in-sync"), Some("lock")));
}

/// The files a `--check --format json` lists: (path, change).
fn changes(doc: &serde_json::Value) -> Vec<(String, String)> {
    let files = doc["files"].as_array().unwrap().iter();
    files.map(|f| (f["path"].as_str().unwrap().to_string(), f["change"].as_str().unwrap().to_string())).collect()
}

#[test]
fn drift_lists_files_prints_the_fix_and_writes_nothing() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    let before = tree(&pod.path("out"));
    pod.edit_pod("tools: [api]", "tools: [{service: api, allow: a}]");
    let (code, doc) = check_json(&pod, &["--diff", "full"]);
    assert_eq!(code, 1);
    assert_eq!(doc["answered_by"], "compile");
    let files = changes(&doc);
    for want in ["context/bot/tools.json", "context/bot/CLAWDAPUS.md", "report/bot.json", "clawc.lock"] {
        assert!(files.contains(&(want.to_string(), "update".to_string())), "{want} not in {files:?}");
    }
    // One agent's grants changed: the report index (agents, services, warnings) did not.
    assert!(!files.iter().any(|(p, _)| p == "report.json"), "{files:?}");
    let tools = doc["files"].as_array().unwrap().iter().find(|f| f["path"] == "context/bot/tools.json").unwrap();
    assert!(tools["diff"].as_str().unwrap().contains("-      \"name\": \"api.b\","), "{}", tools["diff"]);
    assert_eq!(doc["fix"], "clawc compile claw-pod.yml -o out --images none");
    assert_eq!(tree(&pod.path("out")), before, "--check wrote something");
    // Human output: a list, the diff, the fix; no colour when stdout is not a terminal.
    let o =
        super::harness::clawc().current_dir(pod.dir.path()).args(["compile", "-o", "out", "--check", "--diff", "stat"]).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text.contains("update context/bot/tools.json  +0 -"), "{text}");
    assert!(text.contains("to update the compiled tree, run:\n  clawc compile claw-pod.yml -o out"), "{text}");
    assert!(!text.contains('\x1b'), "colour escapes on a pipe");
}

#[test]
fn created_and_deleted_files() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    std::fs::remove_file(pod.path("out/context/bot/feeds.json")).unwrap();
    pod.edit_pod("  bot:", "  robot:");
    let (code, doc) = check_json(&pod, &["--diff", "none"]);
    assert_eq!(code, 1);
    let changes: Vec<String> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {}", f["change"].as_str().unwrap(), f["path"].as_str().unwrap()))
        .collect();
    assert!(changes.contains(&"create context/robot/tools.json".to_string()), "{changes:?}");
    assert!(changes.contains(&"delete context/bot/tools.json".to_string()), "{changes:?}");
    assert!(!changes.iter().any(|c| c.ends_with("context/bot/feeds.json")), "a file already gone is not drift: {changes:?}");
    assert!(doc["files"][0].get("diff").is_none());
}

#[test]
fn lock_is_deterministic_and_holds_no_values() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    let lock = pod.read("out/clawc.lock");
    let v: serde_json::Value = serde_json::from_str(&lock).unwrap();
    assert_eq!(v["env"]["keys"], serde_json::json!(["REGION", "REPO_ROOT"].iter().filter(|k| lock.contains(*k)).collect::<Vec<_>>()));
    assert_eq!(v["env"]["secret_keys"], serde_json::json!(["API_TOKEN"]));
    assert!(!lock.contains("tok-secret-0123456789"));
    let inputs: Vec<&str> = v["inputs"].as_array().unwrap().iter().map(|i| i["path"].as_str().unwrap()).collect();
    assert!(
        inputs.contains(&"claw-pod.yml") && inputs.contains(&"api/.claw-describe.json") && inputs.contains(&"api/Dockerfile"),
        "{inputs:?}"
    );
    let desc = v["inputs"].as_array().unwrap().iter().find(|i| i["path"] == "api/.claw-describe.json").unwrap();
    assert_eq!((desc["service"].as_str(), desc["origin"].as_str()), (Some("api"), Some("build-context")));
    std::fs::remove_dir_all(pod.path("out")).unwrap();
    assert_eq!(pod.compile(&[]).code, 0);
    assert_eq!(pod.read("out/clawc.lock"), lock);
}

#[test]
fn any_input_change_defeats_the_fast_path() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    // A file that was probed and missing appears: it could change the output.
    std::fs::write(pod.path("api/Dockerfile"), "FROM scratch\n").unwrap();
    assert_eq!(check_json(&pod, &[]).1["answered_by"], "compile");
    assert_eq!(check_json(&pod, &[]).0, 1, "the lock now records a new input");
    assert_eq!(pod.compile(&[]).code, 0);
    // An env value the output depends on changes (process env overlays .env).
    let o = super::harness::clawc()
        .current_dir(pod.dir.path())
        .env("REGION", "us")
        .args(["compile", "-o", "out", "--check", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((o.status.code(), doc["answered_by"].as_str()), (Some(1), Some("compile")));
    // A token value changes: redacted output does not depend on it, the lock still answers.
    std::fs::write(pod.path(".env"), "API_TOKEN=another-token-987654321\n").unwrap();
    let (code, doc) = check_json(&pod, &[]);
    assert_eq!((code, doc["status"].as_str(), doc["files"].as_array().map(Vec::len)), (0, Some("in-sync"), Some(0)));
    assert_eq!(check_json(&pod, &[]).1["answered_by"], "lock");
    // Reading images where the tree was compiled without: only a compile can tell.
    let (_, doc) = check_json(&pod, &["--images", "auto"]);
    assert_eq!(doc["answered_by"], "compile", "{doc}");
}

#[test]
fn a_committed_secret_fails_the_check_without_printing_it() {
    let pod = pod();
    assert_eq!(pod.compile(&["--secrets", "inline"]).code, 0);
    let (code, doc) = check_json(&pod, &[]);
    assert_eq!(code, 1);
    let found: Vec<&str> = doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "clawc::secrets::committed_secret")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        found,
        ["`context/bot/feeds.json` holds the literal value of API_TOKEN", "`context/bot/tools.json` holds the literal value of API_TOKEN"]
    );
    assert!(!doc.to_string().contains("tok-secret-0123456789"));
    // The fast path scans too: a redacted tree whose token value later appears in it.
    let pod = pod_with_value_in_description();
    assert_eq!(pod.compile(&[]).code, 0);
    std::fs::write(pod.path(".env"), "API_TOKEN=Operation-description-text\n").unwrap();
    let (code, doc) = check_json(&pod, &[]);
    assert_eq!((code, doc["answered_by"].as_str()), (1, Some("lock")), "{doc}");
}

/// `.env` is not an input the lock hashes, so a line of it in error is found by compiling:
/// the check exits 2 as the compile does, never "in sync".
#[test]
fn a_dotenv_line_in_error_fails_the_check_as_it_fails_the_compile() {
    let (pod, cache) = recorded();
    assert_eq!(check_cached(&pod, cache.path(), &[]).2, "lock");
    std::fs::write(pod.path(".env"), "API_TOKEN=tok-secret-0123456789\nnot a line\n").unwrap();
    let (code, doc) = check_json_env(&pod, &[], &[("CLAWC_IMAGES", "none"), ("CLAWC_CACHE_DIR", cache.path().to_str().unwrap())]);
    assert_eq!((code, doc["status"].as_str()), (2, Some("failed")), "{doc}");
    assert_eq!(doc["diagnostics"][0]["code"], "clawc::env::bad_line", "{doc}");
}

fn pod_with_value_in_description() -> Pod {
    let pod = pod();
    let d = pod.read("api/.claw-describe.json").replace("does a", "Operation-description-text");
    pod.file("api/.claw-describe.json", &d)
}

#[test]
fn invalid_inputs_exit_2_under_check() {
    let pod = pod();
    std::fs::write(pod.path("claw-pod.yml"), "services: [").unwrap();
    let (code, doc) = check_json(&pod, &[]);
    assert_eq!(code, 2);
    assert_eq!(doc["exit_code"], 2, "the document says the exit code the process has");
    assert_eq!(doc["diagnostics"][0]["code"], "clawc::parse::yaml_syntax");
}

/// `--check --format json` with `env` set and CLAWC_IMAGES unset unless `env` sets it.
/// Every document --check prints must match the published schema.
fn check_json_env(pod: &Pod, extra: &[&str], env: &[(&str, &str)]) -> (i32, serde_json::Value) {
    let mut c = super::harness::clawc();
    c.env_remove("CLAWC_IMAGES")
        .current_dir(pod.dir.path())
        .args(["compile", "claw-pod.yml", "-o", "out", "--check", "--format", "json"])
        .args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let doc: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    let schema = super::schemas::validator("check.schema.json");
    let errors: Vec<String> = schema.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "check output does not match schemas/check.schema.json: {errors:?}\n{doc}");
    (o.status.code().unwrap(), doc)
}

#[test]
fn the_document_says_the_exit_code_for_every_outcome() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    let (code, doc) = check_json(&pod, &[]);
    assert_eq!((code, &doc["exit_code"], &doc["status"]), (0, &0.into(), &"in-sync".into()));
    std::fs::write(pod.path("out/report.json"), "{}\n").unwrap();
    let (code, doc) = check_json(&pod, &[]);
    assert_eq!((code, &doc["exit_code"], &doc["status"]), (1, &1.into(), &"drift".into()));
    // Invalid settings: still one document.
    let bad = pod.file("clawc.toml", "imgaes = \"none\"\n");
    let (code, doc) = check_json(&bad, &[]);
    assert_eq!((code, &doc["exit_code"], &doc["status"]), (2, &2.into(), &"failed".into()));
    assert_eq!(doc["diagnostics"][0]["code"], "clawc::config::unknown_key");
    std::fs::remove_file(bad.path("clawc.toml")).unwrap();
    // The environment failed: the Docker Engine must answer and does not.
    let yaml = bad.read("claw-pod.yml") + "  extra:\n    image: extra:1\n";
    let pod = bad.file("claw-pod.yml", &yaml);
    let (code, doc) = check_json_env(&pod, &["--images", "docker"], &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")]);
    assert_eq!((code, &doc["exit_code"], &doc["status"]), (3, &3.into(), &"failed".into()));
    assert_eq!(doc["diagnostics"][0]["code"], "clawc::image::docker_unreachable");
}

#[test]
fn one_file_differs() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    std::fs::write(pod.path("out/report.json"), "{}\n").unwrap();
    let o =
        super::harness::clawc().current_dir(pod.dir.path()).args(["compile", "-o", "out", "--check", "--diff", "none"]).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.starts_with("drift: 1 file differs from what the pod compiles to\n"), "{text}");
    std::fs::write(pod.path("out/clawc.lock"), "{}\n").unwrap();
    let o =
        super::harness::clawc().current_dir(pod.dir.path()).args(["compile", "-o", "out", "--check", "--diff", "none"]).output().unwrap();
    assert!(String::from_utf8(o.stdout).unwrap().starts_with("drift: 2 files differ"));
}

#[test]
fn check_compares_redacted_trees_only() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    let before = tree(&pod.path("out"));
    let o = super::harness::clawc()
        .current_dir(pod.dir.path())
        .args(["compile", "-o", "out", "--check", "--secrets", "inline"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--check compares redacted trees, so --secrets inline cannot be used with it"), "{err}");
    assert_eq!(tree(&pod.path("out")), before);
    assert_eq!(check_json(&pod, &["--secrets", "redact"]).0, 0, "redact is what --check compares anyway");
}

/// An OCI image layout holding no image: a source that answers "not here" for every
/// reference, without Docker.
fn empty_layout(pod: &Pod, dir: &str) {
    std::fs::create_dir_all(pod.path(dir)).unwrap();
    std::fs::write(pod.path(&format!("{dir}/oci-layout")), "{\"imageLayoutVersion\":\"1.0.0\"}").unwrap();
    std::fs::write(pod.path(&format!("{dir}/index.json")), "{\"schemaVersion\":2,\"manifests\":[]}").unwrap();
}

#[test]
fn the_lock_records_the_image_sources_and_check_reads_them() {
    let no_docker = [("DOCKER_HOST", "unix:///nonexistent/docker.sock")];
    // Compiled without images; checked with no --images, CLAWC_IMAGES or clawc.toml: the
    // lock's `none` is used, so the hashes answer.
    let pod = pod();
    assert_eq!(pod.compile(&["--images", "none"]).code, 0);
    let (code, doc) = check_json_env(&pod, &[], &no_docker);
    assert_eq!((code, doc["answered_by"].as_str()), (0, Some("lock")), "{doc}");
    // An image nothing uses, read from a layout that lacks it: the warning (in report.json)
    // names the source, so only a check reading the same source is in sync.
    let yaml = pod.read("claw-pod.yml") + "  extra:\n    image: extra:1\n";
    let pod = pod.file("claw-pod.yml", &yaml);
    empty_layout(&pod, "images");
    let compiled = pod.run_with_env(&["--images", "oci:images"], &no_docker);
    assert_eq!(compiled.code, 0, "{}", compiled.stdout);
    let lock: serde_json::Value = serde_json::from_str(&pod.read("out/clawc.lock")).unwrap();
    assert_eq!((lock["images"].as_str(), &lock["image_sources"]), (Some("read"), &serde_json::json!(["oci:images"])));
    let (code, doc) = check_json_env(&pod, &[], &no_docker);
    assert_eq!((code, doc["status"].as_str()), (0, Some("in-sync")), "{doc}");
    let (code, doc) = check_json_env(&pod, &["--images", "auto"], &no_docker);
    assert_eq!(code, 1, "read from Docker instead, the report's warning changes: {doc}");
    assert_eq!(doc["fix"], "clawc compile claw-pod.yml -o out", "auto is what the fix's compile reads anyway");
    // The same images from another source are not drift: the lock keeps the committed
    // sources. (Here both layouts lack the image, so only the warning's source differs.)
    empty_layout(&pod, "other");
    let (_, doc) = check_json_env(&pod, &["--images", "oci:other"], &no_docker);
    let lock = doc["files"].as_array().unwrap().iter().find(|f| f["path"] == "clawc.lock").expect("the report's hash changed");
    let diff = lock["diff"].as_str().unwrap();
    assert!(!diff.contains("oci:other") && !diff.contains("-    \"oci:images\""), "the sources themselves are not drift:\n{diff}");
    // The lock is untrusted: a recorded source outside the repository is ignored.
    let outside = tempfile::tempdir().unwrap();
    let tampered = pod.read("out/clawc.lock").replace("\"oci:images\"", &format!("\"oci:{}\"", outside.path().display()));
    std::fs::write(pod.path("out/clawc.lock"), tampered).unwrap();
    let (_, doc) = check_json_env(&pod, &[], &no_docker);
    let text = doc.to_string();
    assert!(!text.contains(&format!("not in oci:{}", outside.path().display())), "read a recorded path outside the root: {doc}");
    assert!(text.contains("(tried: docker (unix:///nonexistent/docker.sock"), "the default (auto) was read instead: {doc}");
}

#[test]
fn another_descriptor_override_is_not_in_sync_by_hashes() {
    let pod = pod();
    let desc = pod.read("api/.claw-describe.json");
    let pod = pod.file("a.json", &desc).file("b.json", &desc);
    assert_eq!(pod.compile(&["--descriptor", "api=a.json"]).code, 0);
    assert_eq!(check_json(&pod, &["--descriptor", "api=a.json"]).1["answered_by"], "lock");
    let (code, doc) = check_json(&pod, &["--descriptor", "api=b.json"]);
    assert_eq!((code, doc["answered_by"].as_str()), (1, Some("compile")), "{doc}");
}

// The stat record (`docs/performance.md`, `docs/security.md`): a no-op check re-reads only
// the files whose metadata changed since the last check, and a record never makes a
// changed tree pass.

/// A pod compiled into `out`, and the cache directory that compile left its stat record
/// in (a check answers from the lock only with a record a compile bound to it).
fn recorded() -> (Pod, tempfile::TempDir) {
    let pod = pod();
    let cache = tempfile::tempdir().unwrap();
    assert_eq!(compiled_into(&pod, cache.path()), 0);
    (pod, cache)
}

/// Compiles `pod` with its stat record in `cache`: the exit code. Waits before and after
/// for the kernel's coarse clock to move past the last writes, since the record only
/// vouches for files changed strictly before it was taken (racy git): the inputs just
/// written, then the compile's outputs.
fn compiled_into(pod: &Pod, cache: &std::path::Path) -> i32 {
    std::thread::sleep(std::time::Duration::from_millis(50));
    let code = pod.run_with_env(&[], &[("CLAWC_IMAGES", "none"), ("CLAWC_CACHE_DIR", cache.to_str().unwrap())]).code;
    std::thread::sleep(std::time::Duration::from_millis(50));
    code
}

/// `--check --format json` with the stat record in `cache`: (exit code, status, answered
/// by, rehashed).
fn check_cached(pod: &Pod, cache: &std::path::Path, extra: &[&str]) -> (i32, String, String, Option<u64>) {
    let cache = cache.display().to_string();
    let (code, doc) = check_json_env(pod, &[&["--diff", "none"], extra].concat(), &[("CLAWC_IMAGES", "none"), ("CLAWC_CACHE_DIR", &cache)]);
    (code, doc["status"].as_str().unwrap().into(), doc["answered_by"].as_str().unwrap().into(), doc["rehashed"].as_u64())
}

/// The stat records under `cache` (not the render memos beside them).
fn records(cache: &std::path::Path) -> Vec<std::path::PathBuf> {
    let dir = cache.join("check/v1");
    let all: Vec<std::path::PathBuf> = std::fs::read_dir(dir).map(|d| d.map(|e| e.unwrap().path()).collect()).unwrap_or_default();
    all.into_iter().filter(|p| p.extension().is_none()).collect()
}

#[test]
fn a_compile_leaves_a_record_the_next_check_uses() {
    let pod = pod();
    let cache = tempfile::tempdir().unwrap();
    let env = [("CLAWC_CACHE_DIR", cache.path().to_str().unwrap())];
    assert_eq!(pod.run_with_env(&["--no-cache"], &env).code, 0);
    assert!(records(cache.path()).is_empty(), "--no-cache writes no record");
    // Inputs written in the clock tick the compile begins in are not stamped (racy).
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(pod.run_with_env(&[], &env).code, 0);
    assert_eq!(records(cache.path()).len(), 1, "the compile recorded what it found current");
    let memo = records(cache.path())[0].with_extension("memo");
    assert!(memo.is_file(), "and kept what it rendered beside the record");
    // The compile recorded its inputs as it read them, and its outputs: the first check
    // after it reads no file again. (A recompile first: an output the compile wrote in
    // its record's own clock tick is not vouched for, and the recompile stamps it anew.)
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(pod.run_with_env(&[], &env).code, 0);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(check_cached(&pod, cache.path(), &[]), (0, "in-sync".into(), "lock".into(), Some(0)));
    // An output forged behind clawc's back is still seen by both.
    forge(&pod.path("out/context/bot/tools.json"), false);
    assert_eq!(check_cached(&pod, cache.path(), &[]).1, "drift");
    assert_eq!(pod.run_with_env(&[], &env).code, 0);
    assert_eq!(check_cached(&pod, cache.path(), &[]).1, "in-sync");
    // And an input: read again, found changed, so the check compiles.
    std::thread::sleep(std::time::Duration::from_millis(50));
    forge(&pod.path("api/.claw-describe.json"), false);
    assert_eq!(check_cached(&pod, cache.path(), &[]).2, "compile", "a forged input is read, not vouched for");
}

/// An input whose modification time is not before the compile began (here: set ahead,
/// as a file changed in the clock tick the compile began in, or from a clock ahead, has
/// it) is not vouched for by the compile's record: the next check reads it again.
#[test]
fn an_input_changed_as_the_compile_began_is_read_again_by_the_next_check() {
    let pod = pod();
    let cache = tempfile::tempdir().unwrap();
    let env = [("CLAWC_CACHE_DIR", cache.path().to_str().unwrap())];
    let ahead = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(pod.path("api/.claw-describe.json")).unwrap().set_modified(ahead).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    for _ in 0..2 {
        assert_eq!(pod.run_with_env(&[], &env).code, 0);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (code, status, by, rehashed) = check_cached(&pod, cache.path(), &[]);
    assert_eq!((code, status.as_str(), by.as_str()), (0, "in-sync", "lock"));
    assert_eq!(rehashed, Some(1), "the descriptor, and only it, is read again");
}

/// A check the lock cannot answer (a skill folder: a file added to it would be drift) is
/// answered by compiling; files the compile's record vouches for are not read, and a file
/// forged behind clawc's back still is.
#[test]
fn a_check_answered_by_compiling_still_sees_a_forged_file() {
    let pod = pod().file("skills/tidy/SKILL.md", "# Tidy\n");
    pod.edit_pod("      tools: [api]\n", "      tools: [api]\n      skills: [skills/tidy]\n");
    let cache = tempfile::tempdir().unwrap();
    let env = [("CLAWC_CACHE_DIR", cache.path().to_str().unwrap())];
    for _ in 0..2 {
        assert_eq!(pod.run_with_env(&[], &env).code, 0);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(check_cached(&pod, cache.path(), &[]), (0, "in-sync".into(), "compile".into(), None));
    for rel in ["out/context/bot/skills/tidy/SKILL.md", "out/report/bot.json"] {
        forge(&pod.path(rel), false);
        let (code, status, by, _) = check_cached(&pod, cache.path(), &[]);
        assert_eq!((code, status.as_str(), by.as_str()), (1, "drift", "compile"), "{rel}");
        assert_eq!(pod.run_with_env(&[], &env).code, 0);
    }
}

#[test]
fn a_second_no_op_check_rehashes_nothing_and_nothing_lands_under_out() {
    let (pod, cache) = recorded();
    let before = tree(&pod.path("out"));
    // The compile's record vouches for every file but those it wrote within the record's
    // clock tick (the lock, and any written just before it); the check records them too.
    let (code, status, by, _) = check_cached(&pod, cache.path(), &[]);
    assert_eq!((code, status.as_str(), by.as_str()), (0, "in-sync", "lock"));
    assert_eq!(records(cache.path()).len(), 1, "one record, in the cache");
    let vouched = (0, "in-sync".into(), "lock".into(), Some(0));
    assert_eq!(check_cached(&pod, cache.path(), &[]), vouched, "the record vouches for every file");
    // --no-cache neither reads nor writes it, so only a compile can answer; --strict still
    // reads report.json.
    assert_eq!(check_cached(&pod, cache.path(), &["--no-cache"]), (0, "in-sync".into(), "compile".into(), None));
    assert_eq!(check_cached(&pod, cache.path(), &["--strict"]), (0, "in-sync".into(), "lock".into(), Some(0)));
    // The pod's .env sets a token, so every output is read for the committed-token scan,
    // but a vouched one is not hashed (rehashed stays 0 above); the human format too.
    let mut c = super::harness::clawc();
    c.current_dir(pod.dir.path()).env("CLAWC_CACHE_DIR", cache.path()).args(["compile", "-o", "out", "--check"]);
    assert_eq!(c.output().unwrap().status.code(), Some(0));
    assert_eq!(tree(&pod.path("out")), before, "--check wrote into --out");
    // One file touched: only it is hashed again.
    let report = pod.path("out/report.json");
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::File::options().write(true).open(&report).unwrap().set_modified(std::time::SystemTime::now()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(check_cached(&pod, cache.path(), &[]).3, Some(1));
    assert_eq!(check_cached(&pod, cache.path(), &[]).3, Some(0));
}

#[test]
fn an_edit_that_keeps_size_and_mtime_is_caught_by_ctime() {
    for (file, what) in [("out/context/bot/tools.json", "an output"), ("api/.claw-describe.json", "an input")] {
        let (pod, cache) = recorded();
        check_cached(&pod, cache.path(), &[]);
        assert_eq!(check_cached(&pod, cache.path(), &[]).3, Some(0));
        forge(&pod.path(file), false);
        // An output edited is drift; an input edited is compiled again (here it no longer
        // parses: the first lowercase letter is in a key).
        let (code, status, by, _) = check_cached(&pod, cache.path(), &[]);
        assert_eq!(by, "compile", "{what} edited with its size and mtime kept");
        assert!(code != 0 && status != "in-sync", "{what}: {code} {status}");
    }
}

#[test]
fn a_file_replaced_by_another_inode_is_caught() {
    let (pod, cache) = recorded();
    check_cached(&pod, cache.path(), &[]);
    forge(&pod.path("out/report.json"), true);
    let (code, status, _, _) = check_cached(&pod, cache.path(), &[]);
    assert_eq!((code, status.as_str()), (1, "drift"));
    // The same bytes in a new inode are in sync, after hashing that one file.
    let (pod, cache) = recorded();
    check_cached(&pod, cache.path(), &[]);
    let p = pod.path("out/context/bot/tools.json");
    std::fs::copy(&p, pod.path("copy")).unwrap();
    std::fs::rename(pod.path("copy"), &p).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(check_cached(&pod, cache.path(), &[]), (0, "in-sync".into(), "lock".into(), Some(1)));
    // A directory moved away and replaced by a symlink to it: same files, never followed.
    check_cached(&pod, cache.path(), &[]);
    std::fs::rename(pod.path("out/context"), pod.path("elsewhere")).unwrap();
    std::os::unix::fs::symlink(pod.path("elsewhere"), pod.path("out/context")).unwrap();
    let (code, doc) = check_json_env(&pod, &[], &[("CLAWC_IMAGES", "none"), ("CLAWC_CACHE_DIR", &cache.path().display().to_string())]);
    assert_eq!((code, doc["answered_by"].as_str()), (1, Some("compile")));
    assert!(doc["files"].as_array().unwrap().iter().all(|f| f["found"] == "a symlink at `context`"), "{doc}");
}

/// The record keeps a copy of the lock, so a check whose lock is unchanged neither reads,
/// hashes nor parses it; a lock changed in any way (here one output's hash, its size and
/// mtime kept) is read again.
#[test]
fn the_records_copy_never_hides_an_edited_lock() {
    let (pod, cache) = recorded();
    check_cached(&pod, cache.path(), &[]);
    assert_eq!(check_cached(&pod, cache.path(), &[]), (0, "in-sync".into(), "lock".into(), Some(0)));
    let [record] = records(cache.path()).try_into().unwrap();
    let kept = std::fs::read(&record).unwrap();
    let name = b"context/bot/tools.json";
    assert!(kept.windows(name.len()).any(|w| w == name), "the record holds the lock's outputs");
    let lock = pod.path("out/clawc.lock");
    let (text, mtime) = (pod.read("out/clawc.lock"), std::fs::metadata(&lock).unwrap().modified().unwrap());
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let hash = doc["outputs"][0]["sha256"].as_str().unwrap();
    let other: String = hash.chars().map(|c| if c == '0' { '1' } else { '0' }).collect();
    std::fs::write(&lock, text.replacen(hash, &other, 1)).unwrap();
    std::fs::File::options().write(true).open(&lock).unwrap().set_modified(mtime).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    let (code, status, by, _) = check_cached(&pod, cache.path(), &[]);
    assert_eq!((code, status.as_str(), by.as_str()), (1, "drift", "compile"), "the edited lock was not read");
    // Put back (another ctime): read and hashed again, in sync, and copied for the next.
    std::fs::write(&lock, &text).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(check_cached(&pod, cache.path(), &[]), (0, "in-sync".into(), "lock".into(), Some(0)));
    assert_eq!(check_cached(&pod, cache.path(), &[]), (0, "in-sync".into(), "lock".into(), Some(0)));
}

/// A committed lock that is a symlink (here to the very lock, saved beside the tree) is
/// never read through, nor stood in for by the record's copy of it: the check compiles
/// and reports it by its kind.
#[test]
fn a_symlinked_lock_is_neither_followed_nor_copied() {
    let (pod, cache) = recorded();
    check_cached(&pod, cache.path(), &[]);
    assert_eq!(check_cached(&pod, cache.path(), &[]), (0, "in-sync".into(), "lock".into(), Some(0)));
    std::fs::rename(pod.path("out/clawc.lock"), pod.path("saved.lock")).unwrap();
    std::os::unix::fs::symlink(pod.path("saved.lock"), pod.path("out/clawc.lock")).unwrap();
    let cache = cache.path().display().to_string();
    let (code, doc) = check_json_env(&pod, &[], &[("CLAWC_IMAGES", "none"), ("CLAWC_CACHE_DIR", &cache)]);
    assert_eq!((code, doc["answered_by"].as_str()), (1, Some("compile")), "{doc}");
    let lock = doc["files"].as_array().unwrap().iter().find(|f| f["path"] == "clawc.lock").expect("the lock is drift");
    assert_eq!(lock["found"], "a symlink", "{doc}");
}

/// A check takes the directories under a directory whose stamp the record vouches for as
/// real without an `lstat` each; a directory swapped for a symlink to the same files
/// changes its parent's stamp (`ctime`, even with the `mtime` put back), so it is still
/// seen, at any depth.
#[test]
fn a_directory_swapped_under_a_stamped_parent_is_seen() {
    for (dir, parent) in [("out/context/bot", "out/context"), ("out/context", "out")] {
        // No token value: a check then reads no output for the committed-token scan.
        let pod = pod().file(".env", "REGION=eu\n");
        let cache = tempfile::tempdir().unwrap();
        assert_eq!(compiled_into(&pod, cache.path()), 0);
        check_cached(&pod, cache.path(), &[]);
        assert_eq!(check_cached(&pod, cache.path(), &[]), (0, "in-sync".into(), "lock".into(), Some(0)));
        let mtime = std::fs::metadata(pod.path(parent)).unwrap().modified().unwrap();
        std::fs::rename(pod.path(dir), pod.path("moved")).unwrap();
        std::os::unix::fs::symlink(pod.path("moved"), pod.path(dir)).unwrap();
        std::fs::File::open(pod.path(parent)).unwrap().set_modified(mtime).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let cache = cache.path().display().to_string();
        let (code, doc) = check_json_env(&pod, &[], &[("CLAWC_IMAGES", "none"), ("CLAWC_CACHE_DIR", &cache)]);
        assert_eq!((code, doc["answered_by"].as_str()), (1, Some("compile")), "{dir}: {doc}");
        let at = dir.trim_start_matches("out/");
        assert!(doc["files"].as_array().unwrap().iter().all(|f| f["found"] == format!("a symlink at `{at}`")), "{doc}");
    }
}

/// Without a record bound to the lock, nothing vouches that a compile made it, so the
/// check compiles.
#[test]
fn a_garbled_stale_or_misplaced_record_makes_the_check_compile() {
    let (pod, cache) = recorded();
    let compiles = (0, "in-sync".into(), "compile".into(), None);
    let [record] = records(cache.path()).try_into().unwrap();
    let good = std::fs::read(&record).unwrap();
    // Garbage, a truncated record, a flipped bit, a symlink to a good one: all ignored.
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 1;
    for bad in [b"garbage".to_vec(), good[..good.len() - 1].to_vec(), flipped] {
        std::fs::write(&record, bad).unwrap();
        assert_eq!(check_cached(&pod, cache.path(), &[]), compiles);
    }
    std::fs::write(pod.path("saved"), &good).unwrap();
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink(pod.path("saved"), &record).unwrap();
    assert_eq!(check_cached(&pod, cache.path(), &[]), compiles, "a symlinked record is not read");
    assert_eq!(compiled_into(&pod, cache.path()), 0);
    assert!(!record.symlink_metadata().unwrap().file_type().is_symlink(), "a compile replaces it by a real one");
    assert_eq!(check_cached(&pod, cache.path(), &[]), (0, "in-sync".into(), "lock".into(), Some(0)));
    // A stale record (saved before an edit, put back after it) cannot hide the edit.
    let stale = std::fs::read(&record).unwrap();
    std::fs::write(pod.path("out/context/bot/feeds.json"), "[]\n").unwrap();
    std::fs::write(&record, &stale).unwrap();
    assert_eq!(check_cached(&pod, cache.path(), &[]).1, "drift");
    // A record for another lock is not used: a recompile (its record elsewhere) makes a
    // new lock.
    let (pod, cache) = recorded();
    pod.edit_pod("ttl: 5", "ttl: 6");
    assert_eq!(pod.compile(&[]).code, 0);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(check_cached(&pod, cache.path(), &[]), compiles);
}

#[test]
fn no_record_is_kept_in_out_or_in_the_repository() {
    let (pod, _) = recorded();
    let before = tree(pod.dir.path());
    for inside in ["out/.cache", ".cache"] {
        let cache = pod.path(inside);
        for _ in 0..2 {
            assert_eq!(check_cached(&pod, &cache, &[]), (0, "in-sync".into(), "compile".into(), None), "{inside}");
        }
        assert!(!cache.exists(), "a record was written under {inside}");
    }
    assert_eq!(tree(pod.dir.path()), before);
}

/// A tree of more than 1,024 outputs is looked at on every core, by a check (while the
/// inputs are looked at on the calling thread) and by a write: in sync from the lock; an
/// input or an output that differs, in any part, sends the check to the compile; and a
/// directory swapped for a symlink in the last part stops the write before anything is
/// written.
/// `clawc compile claw-pod.yml -o out --format json <extra>` in `dir`, with its stat
/// records in `cache`: the exit code, the JSON printed (`null` if none) and the text.
fn compile_json(dir: &std::path::Path, cache: &std::path::Path, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let o = super::harness::clawc()
        .current_dir(dir)
        .env("CLAWC_CACHE_DIR", cache)
        .args(["compile", "claw-pod.yml", "-o", "out", "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    let doc = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o.status.code().unwrap_or(-1), doc, String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn a_big_tree_is_looked_at_on_every_core_and_any_difference_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    // 40 services × 10 replicas: 1,243 outputs.
    super::determinism::generate::generate(dir.path(), 40);
    let cache = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let (code, doc, _) = compile_json(dir.path(), cache.path(), extra);
        (code, doc)
    };
    assert_eq!(run(&[]).0, 0);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let lock: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/clawc.lock")).unwrap()).unwrap();
    let outputs: Vec<&str> = lock["outputs"].as_array().unwrap().iter().map(|o| o["path"].as_str().unwrap()).collect();
    assert!(outputs.len() > 1024, "{} outputs", outputs.len());
    let check = || run(&["--check", "--diff", "none"]);
    let (code, doc) = check();
    assert_eq!((code, doc["answered_by"].as_str()), (0, Some("lock")), "{doc}");
    assert_eq!(check().1["rehashed"], 0, "the record vouches for every file");
    // An output in the last part: drift, found by the compile.
    let last = dir.path().join("out").join(outputs[outputs.len() - 1]);
    super::harness::forge(&last, false);
    let (code, doc) = check();
    assert_eq!((code, doc["answered_by"].as_str()), (1, Some("compile")), "{doc}");
    assert_eq!(doc["files"][0]["path"], outputs[outputs.len() - 1]);
    assert_eq!(run(&[]).0, 0);
    // An input (a descriptor, its bytes changed and its meaning not): only the lock differs.
    let descriptor = dir.path().join("svc/tools-7/.claw-describe.json");
    let text = std::fs::read_to_string(&descriptor).unwrap();
    std::fs::write(&descriptor, format!("{text}\n")).unwrap();
    let (code, doc) = check();
    assert_eq!((code, doc["answered_by"].as_str()), (1, Some("compile")), "{doc}");
    let files: Vec<&str> = doc["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(files, ["clawc.lock"]);
    // A write of a big tree looks at it on every core too: a directory of the last part
    // swapped for a symlink is refused before anything is written, through it or not.
    let last = dir.path().join("out").join(outputs[outputs.len() - 1]);
    let agent = last.parent().unwrap().to_path_buf();
    std::fs::rename(&agent, dir.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("moved"), &agent).unwrap();
    let before = std::fs::read(dir.path().join("out/clawc.lock")).unwrap();
    let moved = std::fs::read(dir.path().join("moved").join(last.file_name().unwrap())).unwrap();
    let o = super::harness::clawc()
        .current_dir(dir.path())
        .env("CLAWC_IMAGES", "none")
        .env("CLAWC_CACHE_DIR", cache.path())
        .args(["compile", "claw-pod.yml", "-o", "out"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{said}");
    assert!(said.contains("clawc::output::not_a_directory"), "{said}");
    assert_eq!(std::fs::read(dir.path().join("out/clawc.lock")).unwrap(), before, "the lock was rewritten");
    assert_eq!(std::fs::read(dir.path().join("moved").join(last.file_name().unwrap())).unwrap(), moved, "written through the symlink");
}

/// A check that compiles compares the tree with `--out` a batch of services at a time (600
/// agent ids: two batches) and keeps only what differs: an edit in either batch, a service
/// renamed in the last one (its files stale, its new ones missing), and exactly what the
/// write then writes and removes.
#[test]
fn a_check_that_compiles_finds_drift_in_every_batch_and_what_the_write_would_do() {
    let dir = tempfile::tempdir().unwrap();
    super::determinism::generate::generate(dir.path(), 60);
    let cache = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| compile_json(dir.path(), cache.path(), extra);
    assert_eq!(run(&[]).0, 0);
    let old_lock = std::fs::read_to_string(dir.path().join("out/clawc.lock")).unwrap();
    // Services in name order: agent-0 is in the first batch, agent-8 and agent-9 in the last.
    super::harness::forge(&dir.path().join("out/context/agent-0-0/CLAWDAPUS.md"), false);
    super::harness::forge(&dir.path().join("out/context/agent-8-3/tools.json"), false);
    let pod = std::fs::read_to_string(dir.path().join("claw-pod.yml")).unwrap();
    std::fs::write(dir.path().join("claw-pod.yml"), pod.replace("  agent-9:\n", "  agent-zz:\n")).unwrap();
    let (code, doc, _) = run(&["--check", "--diff", "none"]);
    assert_eq!((code, doc["answered_by"].as_str()), (1, Some("compile")), "{doc}");
    let files = changes(&doc);
    let change = |p: &str| files.iter().find(|(path, _)| path == p).map(|(_, c)| c.as_str());
    assert_eq!(change("context/agent-0-0/CLAWDAPUS.md"), Some("update"), "{files:?}");
    assert_eq!(change("context/agent-8-3/tools.json"), Some("update"), "{files:?}");
    let was_nine = |p: &str| p.contains("agent-9-") || p == "report/agent-9.json";
    let stale: Vec<&str> =
        old_lock.lines().filter_map(|l| l.trim().strip_prefix("\"path\": \"")?.strip_suffix("\",")).filter(|p| was_nine(p)).collect();
    assert!(stale.len() > 30, "{stale:?}");
    for p in &stale {
        assert_eq!(change(p), Some("delete"), "{p}");
    }
    for (p, c) in &files {
        match c.as_str() {
            "delete" => assert!(was_nine(p), "{p} deleted"),
            "create" => assert!(p.contains("agent-zz"), "{p} created"),
            _ => {}
        }
    }
    assert!(files.iter().any(|(p, c)| p == "report/agent-zz.json" && c == "create"), "{files:?}");
    // The write does what the check said it would.
    let (code, doc, text) = run(&[]);
    assert_eq!(code, 0, "{text}");
    let summary = &doc["summary"];
    let list = |k: &str| -> std::collections::BTreeSet<String> {
        summary[k].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect()
    };
    let said = |want: &[&str]| -> std::collections::BTreeSet<String> {
        files.iter().filter(|(_, c)| want.contains(&c.as_str())).map(|(p, _)| p.clone()).collect()
    };
    assert_eq!(list("written"), said(&["update", "create"]));
    assert_eq!(list("removed"), said(&["delete"]));
    assert_eq!(run(&["--check"]).0, 0);
}
