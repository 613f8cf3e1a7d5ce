//! Hostile trees and names: what a pull request can commit into the compiled tree, and
//! what it can make clawc do with it. Each test asserts a promise of docs/security.md:
//! no secret printed, nothing outside `--out` touched, the previous tree intact after a
//! failure, no foreign file replaced or deleted.

use super::harness::{Pod, Run, clawc, http_descriptor, tree};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

const CANARY: &str = "CANARY-4f1d9c-do-not-print";

fn pod() -> Pod {
    let desc = http_descriptor(&["a", "b"])
        .replace("\"description\":\"svc\"", "\"description\":\"svc\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}");
    Pod::new("services:\n  bot:\n    environment: [API_TOKEN]\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &desc)
}

/// `clawc <args>` in the pod directory, human output.
fn human(pod: &Pod, args: &[&str]) -> Run {
    let o = clawc().current_dir(pod.dir.path()).args(args).output().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

fn assert_silent_about(run: &Run, secret: &str) {
    assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret), "printed {secret:?}:\n{}\n{}", run.stdout, run.stderr);
}

fn compiled(pod: &Pod) -> std::collections::BTreeMap<String, Vec<u8>> {
    assert_eq!(pod.compile(&[]).code, 0);
    tree(&pod.path("out"))
}

#[test]
fn check_never_reads_through_a_symlink_a_fifo_or_a_directory() {
    let pod = pod();
    compiled(&pod);
    let outside = pod.path("environ");
    std::fs::write(&outside, format!("GITHUB_TOKEN={CANARY}\n")).unwrap();
    std::fs::remove_file(pod.path("out/report.json")).unwrap();
    symlink(&outside, pod.path("out/report.json")).unwrap();
    // A symlinked directory on the way, and a FIFO (reading it would hang).
    std::fs::create_dir(pod.path("elsewhere")).unwrap();
    std::fs::write(pod.path("elsewhere/CLAWDAPUS.md"), CANARY).unwrap();
    std::fs::rename(pod.path("out/context/bot"), pod.path("bot-moved")).unwrap();
    symlink(pod.path("elsewhere"), pod.path("out/context/bot")).unwrap();
    std::fs::remove_file(pod.path("out/clawc.lock")).unwrap();
    let c = std::ffi::CString::new(pod.path("out/clawc.lock").into_os_string().into_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for format in ["human", "json"] {
        let run = human(&pod, &["compile", "claw-pod.yml", "-o", "out", "--check", "--diff", "full", "--format", format]);
        assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
        assert_silent_about(&run, CANARY);
        if format == "json" {
            let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
            let files = doc["files"].as_array().unwrap();
            let report = files.iter().find(|f| f["path"] == "report.json").unwrap();
            assert_eq!(report["change"], "update");
            assert!(report["diff"].as_str().unwrap().contains("(a symlink; not read)"), "{report}");
            assert_eq!(report["found"], "a symlink");
            let lock = files.iter().find(|f| f["path"] == "clawc.lock").unwrap();
            assert_eq!(lock["found"], "a FIFO");
            let md = files.iter().find(|f| f["path"] == "context/bot/CLAWDAPUS.md").unwrap();
            assert!(md["diff"].as_str().unwrap().contains("a symlink at `context/bot`"), "{md}");
        }
    }
}

#[test]
fn writes_never_follow_a_symlink_in_out() {
    let pod = pod();
    compiled(&pod);
    std::fs::create_dir(pod.path("elsewhere")).unwrap();
    std::fs::remove_dir_all(pod.path("out/context")).unwrap();
    symlink("../elsewhere", pod.path("out/context")).unwrap();
    let before = tree(&pod.path("out"));
    let run = pod.compile(&[]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    run.assert_error("clawc::output::not_a_directory", "is a symlink where clawc needs a directory");
    assert!(std::fs::read_dir(pod.path("elsewhere")).unwrap().next().is_none(), "wrote through the symlink");
    assert_eq!(tree(&pod.path("out")), before);
    // The output directory itself may not be a symlink either.
    std::fs::remove_dir_all(pod.path("out")).unwrap();
    symlink(pod.path("elsewhere"), pod.path("out")).unwrap();
    let run = pod.compile(&[]);
    assert_eq!(run.code, 3);
    run.assert_error("clawc::output::not_a_directory", "is a symlink");
    assert!(std::fs::read_dir(pod.path("elsewhere")).unwrap().next().is_none());
}

/// Commits `journal` in `pod`'s staging, as a pull request could, and compiles: the
/// compile completes it and succeeds.
fn completes_committed(pod: &Pod, journal: &str) -> Run {
    std::fs::write(pod.path("out/.clawc-stage/journal.json"), journal).unwrap();
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    run
}

/// A pull request may commit a half-applied write: `.clawc-stage/` with a journal. The next
/// run completes it, but moves only regular files it finds staged: a staged symlink (here
/// to a file outside the tree) is never placed into the tree.
#[test]
fn a_committed_journal_never_moves_a_symlink_into_the_tree() {
    let pod = pod();
    compiled(&pod);
    std::fs::write(pod.path("outside.txt"), CANARY).unwrap();
    std::fs::create_dir(pod.path("out/.clawc-stage")).unwrap();
    symlink(pod.path("outside.txt"), pod.path("out/.clawc-stage/0")).unwrap();
    std::fs::write(pod.path("out/.clawc-stage/1"), "staged").unwrap();
    let journal = r#"{"writes":[["0","context/bot/planted"],["1","context/bot/staged.txt"]],"deletes":[]}"#;
    let run = completes_committed(&pod, journal);
    assert!(std::fs::symlink_metadata(pod.path("out/context/bot/planted")).is_err(), "a staged symlink was moved into the tree");
    assert!(!pod.path("out/.clawc-stage").exists());
    assert_silent_about(&run, CANARY);
}

/// A write stages each file at its output path under `.clawc-stage/t/`, and moves a
/// directory the tree does not have into place whole. A journal committed in a pull
/// request naming such paths moves only regular files reached through real directories:
/// a staged directory that is a symlink (here to a directory outside the tree) is never
/// entered, and nothing is moved out of it; a staged FIFO is not moved either.
#[test]
fn a_committed_journal_never_moves_files_through_a_symlinked_staging_directory() {
    let pod = pod();
    compiled(&pod);
    std::fs::create_dir_all(pod.path("outside/bot")).unwrap();
    std::fs::write(pod.path("outside/bot/planted"), CANARY).unwrap();
    std::fs::create_dir_all(pod.path("out/.clawc-stage/t/report")).unwrap();
    symlink(pod.path("outside"), pod.path("out/.clawc-stage/t/context")).unwrap();
    mkfifo(&pod.path("out/.clawc-stage/t/report/fifo"));
    let journal = r#"{"writes":[["t/context/bot/planted","context/bot/planted"],["t/report/fifo","report/fifo"]],"deletes":[]}"#;
    let run = completes_committed(&pod, journal);
    assert!(std::fs::symlink_metadata(pod.path("out/context/bot/planted")).is_err(), "moved into the tree through a symlink");
    assert!(std::fs::symlink_metadata(pod.path("out/report/fifo")).is_err(), "a staged FIFO was moved into the tree");
    assert_eq!(std::fs::read(pod.path("outside/bot/planted")).unwrap(), CANARY.as_bytes(), "moved out of the directory it points at");
    assert!(!pod.path("out/.clawc-stage").exists());
    assert_silent_about(&run, CANARY);
}

/// A fresh write killed after its commit, once it had moved `context` into place whole:
/// the next run moves what is still staged (and skips what was moved), then compiles.
#[test]
fn a_fresh_write_killed_after_moving_a_directory_whole_is_completed_by_the_next_run() {
    let pod = big_pod(3);
    let new = compile_other(&pod, "reference");
    let (out, stage) = (pod.path("out"), pod.path("out/.clawc-stage"));
    // The compile would not write this file: only the journal's completion puts it there.
    let mut files: Vec<(String, Vec<u8>)> = new.clone().into_iter().filter(|(rel, _)| rel != "clawc.lock").collect();
    files.push(("report/staged-only.txt".to_string(), b"staged".to_vec()));
    files.push(("clawc.lock".to_string(), new["clawc.lock"].clone()));
    let mut writes = Vec::new();
    for (rel, bytes) in &files {
        let at = if rel.starts_with("context/") { out.join(rel) } else { stage.join("t").join(rel) };
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(&at, bytes).unwrap();
        std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o644)).unwrap();
        writes.push(serde_json::json!([format!("t/{rel}"), rel]));
    }
    let journal = serde_json::json!({"writes": writes, "deletes": []});
    std::fs::write(stage.join("journal.json"), journal.to_string()).unwrap();
    let mut after = compile_other(&pod, "out");
    assert_eq!(after.remove("report/staged-only.txt").as_deref(), Some(&b"staged"[..]), "the staged file was moved");
    assert_eq!(after, new);
    assert!(!stage.exists());
}

/// The wall's reader check looks at a `DISCORD_BOT_TOKEN` value (is it blank?): its
/// diagnostic names the channel and the variable, never the value.
#[test]
fn the_wall_reader_check_never_prints_the_bot_token() {
    let pod = Pod::new(&format!(
        "services:\n  reader:\n    image: x\n    x-claw:\n      cllama: passthrough\n      handles:\n        discord: {{id: \"1\", guilds: [{{id: g, channels: [\"7\"]}}]}}\n  other:\n    image: x\n    environment:\n      DISCORD_BOT_TOKEN: {CANARY}\n    x-claw:\n      cllama: passthrough\n      handles:\n        discord: {{id: \"2\", guilds: [{{id: g, channels: [\"8\"]}}]}}\n"
    ));
    for format in ["human", "json"] {
        let run = human(&pod, &["compile", "claw-pod.yml", "-o", "out", "--images", "none", "--format", format]);
        assert_eq!(run.code, 2, "{}", run.stdout);
        assert!(
            run.stdout.contains("clawc::pod::wall_reader") || run.stderr.contains("clawc::pod::wall_reader"),
            "{}{}",
            run.stdout,
            run.stderr
        );
        assert_silent_about(&run, CANARY);
    }
    assert!(!pod.path("out").exists());
}

/// Edits the lock of `out` to claim `path` with `sha256`.
fn claim(pod: &Pod, path: &str, sha256: &str) {
    let lock_path = pod.path("out/clawc.lock");
    let mut lock: serde_json::Value = serde_json::from_slice(&std::fs::read(&lock_path).unwrap()).unwrap();
    lock["outputs"].as_array_mut().unwrap().push(serde_json::json!({ "path": path, "sha256": sha256 }));
    std::fs::write(lock_path, serde_json::to_vec(&lock).unwrap()).unwrap();
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn a_forged_lock_cannot_delete_foreign_files() {
    let pod = pod();
    compiled(&pod);
    // A file the lock claims with a hash it does not have: kept.
    std::fs::write(pod.path("out/NOTES.md"), "my notes").unwrap();
    claim(&pod, "NOTES.md", &sha256(b"something else"));
    // A key behind a symlinked directory, claimed with its true hash: never reached.
    std::fs::create_dir(pod.path("ssh")).unwrap();
    std::fs::write(pod.path("ssh/id_ed25519"), "KEY").unwrap();
    symlink(pod.path("ssh"), pod.path("out/ssh")).unwrap();
    claim(&pod, "ssh/id_ed25519", &sha256(b"KEY"));
    // An entry that climbs out of --out.
    std::fs::write(pod.path("victim"), "V").unwrap();
    claim(&pod, "../victim", &sha256(b"V"));
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    run.assert_error("clawc::output::kept_modified", "NOTES.md");
    assert_eq!(pod.read("out/NOTES.md"), "my notes");
    assert_eq!(pod.read("ssh/id_ed25519"), "KEY");
    assert_eq!(pod.read("victim"), "V");
}

/// The check's side of the forged lock above: a file it claims outside `--out`, or behind
/// a symlinked directory, is never read, shown or listed for deletion.
#[test]
fn a_forged_lock_cannot_make_check_read_or_list_foreign_files() {
    let pod = pod();
    compiled(&pod);
    std::fs::create_dir(pod.path("ssh")).unwrap();
    std::fs::write(pod.path("ssh/id_ed25519"), CANARY).unwrap();
    symlink(pod.path("ssh"), pod.path("out/ssh")).unwrap();
    claim(&pod, "ssh/id_ed25519", &sha256(CANARY.as_bytes()));
    std::fs::write(pod.path("victim"), CANARY).unwrap();
    claim(&pod, "../victim", &sha256(CANARY.as_bytes()));
    let run = human(&pod, &["compile", "claw-pod.yml", "-o", "out", "--check", "--diff", "full", "--format", "json"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_silent_about(&run, CANARY);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["answered_by"], "compile");
    let files: Vec<&str> = doc["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(files, ["clawc.lock"], "only the forged lock itself differs");
}

/// A pull request that widens an agent's grant in the committed `tools.json` and writes
/// the new file's hash into `clawc.lock` has a lock whose hashes all match: `--check`
/// must still compile and show the widened file, on a fresh machine (CI: no stat record)
/// and on the one that compiled the tree (its record is bound to the lock it wrote).
#[test]
fn a_lock_forged_to_match_a_widened_tree_never_passes_check() {
    let pod = pod();
    compiled(&pod);
    let tools = "context/bot/tools.json";
    let honest = pod.read(&format!("out/{tools}"));
    let widened = honest.replacen("\"tools\": [", "\"tools\": [\n    {\"name\": \"api.drop_tables\"},", 1);
    assert_ne!(widened, honest, "the grant was widened");
    std::fs::write(pod.path(&format!("out/{tools}")), &widened).unwrap();
    let lock_path = pod.path("out/clawc.lock");
    let mut lock: serde_json::Value = serde_json::from_slice(&std::fs::read(&lock_path).unwrap()).unwrap();
    let entry = lock["outputs"].as_array_mut().unwrap().iter_mut().find(|o| o["path"] == tools).unwrap();
    entry["sha256"] = sha256(widened.as_bytes()).into();
    std::fs::write(&lock_path, serde_json::to_vec_pretty(&lock).unwrap()).unwrap();
    let fresh = tempfile::tempdir().unwrap();
    for cache in [Some(fresh.path()), None] {
        let mut c = clawc();
        c.current_dir(pod.dir.path()).args(["compile", "claw-pod.yml", "-o", "out", "--check", "--diff", "none", "--format", "json"]);
        if let Some(cache) = cache {
            c.env("CLAWC_CACHE_DIR", cache);
        }
        let o = c.output().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!((o.status.code(), doc["answered_by"].as_str()), (Some(1), Some("compile")), "{cache:?}: {doc}");
        let files: Vec<&str> = doc["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
        assert_eq!(files, ["clawc.lock", tools], "{cache:?}");
    }
    // A compile puts the grant back as the pod has it.
    assert_eq!(pod.compile(&[]).code, 0);
    assert_eq!(pod.read(&format!("out/{tools}")), honest);
}

#[test]
fn an_out_holding_files_clawc_did_not_write_is_refused() {
    let pod = pod();
    std::fs::write(pod.path("report.json"), "{\"mine\": true}").unwrap();
    let before = tree(pod.dir.path());
    let run = clawc().current_dir(pod.dir.path()).args(["compile", "claw-pod.yml", "-o", ".", "--format", "json"]).output().unwrap();
    assert_eq!(run.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&run.stdout).contains("clawc::output::not_owned"));
    assert_eq!(tree(pod.dir.path()), before, "something was written");
}

#[test]
fn a_blocked_write_leaves_the_previous_tree_byte_identical() {
    let pod = pod();
    let before = compiled(&pod);
    // A non-empty directory where a new file goes, and a rename of the agent, so the
    // compile would write several files and delete others.
    pod.edit_pod("  bot:", "  robot:");
    std::fs::create_dir_all(pod.path("out/context/robot/tools.json/x")).unwrap();
    let run = pod.compile(&[]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    run.assert_error("clawc::output::not_owned", "is a directory");
    let mut after = tree(&pod.path("out"));
    assert!(after.remove("context/robot/tools.json/x").is_none());
    assert_eq!(after, before);
    assert!(!pod.path("out/.clawc-stage").exists());
}

#[test]
fn an_unsafe_skill_name_is_refused_before_anything_is_written() {
    let desc = http_descriptor(&["a"]).replace("\"description\":\"svc\"", "\"description\":\"svc\",\"skill\":\"skills/api.md/.\"");
    let pod = Pod::new("services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &desc)
        .file("api/skills/api.md", "# skill");
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_error("clawc::source::invalid_skill_name", "skills/api.md/.");
    assert!(!pod.out_exists());
}

fn big_pod(agents: usize) -> Pod {
    let desc = http_descriptor(&["a", "b", "c"]);
    Pod::new(&format!(
        "services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      count: {agents}\n      tools: [api]\n  api:\n    build: ./api\n"
    ))
    .file("api/.claw-describe.json", &desc)
}

fn compile_other(pod: &Pod, out: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    let o = clawc().current_dir(pod.dir.path()).args(["compile", "claw-pod.yml", "-o", out]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    tree(&pod.path(out))
}

/// Starts `clawc compile` into `out` and sends it `signal` after `delay_ms`.
fn compile_and_signal(pod: &Pod, delay_ms: u64, signal: i32) -> std::process::ExitStatus {
    let mut child = clawc()
        .current_dir(pod.dir.path())
        .args(["compile", "claw-pod.yml", "-o", "out"])
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(delay_ms));
    unsafe { libc::kill(child.id() as i32, signal) };
    child.wait().unwrap()
}

#[test]
fn an_interrupted_write_leaves_the_old_tree_or_the_new_one() {
    let pod = big_pod(150);
    let old = compile_other(&pod, "out");
    pod.edit_pod("tools: [api]", "tools: [{service: api, allow: a}]");
    let new = compile_other(&pod, "reference");
    assert_ne!(old, new);
    let mut outcomes = std::collections::BTreeSet::new();
    for (i, delay_ms) in [0u64, 5, 10, 20, 30, 45, 60, 80, 120].into_iter().enumerate() {
        // Back to the old tree, then interrupt a compile of the new pod.
        if tree(&pod.path("out")) != old {
            std::fs::remove_dir_all(pod.path("out")).unwrap();
            copy_tree(&old, &pod.path("out"));
        }
        let signal = if i % 2 == 0 { libc::SIGTERM } else { libc::SIGINT };
        let status = compile_and_signal(&pod, delay_ms, signal);
        let now = tree(&pod.path("out"));
        assert!(!pod.path("out/.clawc-stage").exists(), "staging left behind after delay {delay_ms}");
        match status.code() {
            Some(0) => assert!(now == new, "exit 0 but not the new tree"),
            Some(3) => assert!(now == old, "exit 3 but the old tree changed (delay {delay_ms})"),
            // Killed before clawc installed its handler (process start).
            None => assert!(now == old),
            other => panic!("unexpected exit {other:?}"),
        }
        outcomes.insert(status.code());
    }
    assert!(outcomes.contains(&Some(3)), "no interruption was handled: {outcomes:?}");
}

#[test]
fn a_killed_write_is_completed_or_rolled_back_by_the_next_run() {
    let pod = big_pod(150);
    let old = compile_other(&pod, "out");
    pod.edit_pod("tools: [api]", "tools: [{service: api, allow: b}]");
    let new = compile_other(&pod, "reference");
    for delay_ms in [0u64, 10, 25, 50, 75, 100] {
        std::fs::remove_dir_all(pod.path("out")).unwrap();
        copy_tree(&old, &pod.path("out"));
        compile_and_signal(&pod, delay_ms, libc::SIGKILL);
        // Whatever was left, the next run ends with exactly the new tree and no staging.
        assert_eq!(compile_other(&pod, "out"), new, "delay {delay_ms}");
        assert!(!pod.path("out/.clawc-stage").exists());
    }
}

#[test]
fn concurrent_compiles_into_one_out_leave_one_whole_tree() {
    let a = big_pod(60);
    let reference_a = compile_other(&a, "ref");
    std::fs::write(a.path("other.yml"), a.read("claw-pod.yml").replace("tools: [api]", "tools: [{service: api, allow: c}]")).unwrap();
    let o = clawc().current_dir(a.dir.path()).args(["compile", "other.yml", "-o", "ref-b"]).output().unwrap();
    assert!(o.status.success());
    let reference_b = tree(&a.path("ref-b"));
    for _ in 0..4 {
        let spawn = |pod: &str| {
            let mut c = clawc();
            c.current_dir(a.dir.path()).args(["compile", pod, "-o", "out"]).stdout(std::process::Stdio::null());
            c.spawn().unwrap()
        };
        let (mut x, mut y) = (spawn("claw-pod.yml"), spawn("other.yml"));
        assert!(x.wait().unwrap().success() && y.wait().unwrap().success());
        let now = tree(&a.path("out"));
        assert!(now == reference_a || now == reference_b, "a tree mixed from two pods");
    }
}

fn copy_tree(files: &std::collections::BTreeMap<String, Vec<u8>>, to: &Path) {
    for (rel, bytes) in files {
        let p = to.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}

/// A pod whose service description copies the token value (a leak), with `token`.
fn leaky(token: &str) -> Pod {
    let desc = http_descriptor(&["a"])
        .replace("\"description\":\"svc\"", "\"description\":\"svc\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}")
        .replace("\"does a\"", &serde_json::json!(format!("uses {token}")).to_string());
    Pod::new("services:\n  bot:\n    environment: {API_TOKEN: \"${API_TOKEN}\"}\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &desc)
        .file(".env", &format!("API_TOKEN='{token}'\n"))
}

#[test]
fn the_leak_scan_sees_escaped_tokens() {
    for token in ["tok&secret-0123", "tok<secret>0123", "tok\"secret\\0123"] {
        let pod = leaky(token);
        let run = pod.compile(&[]);
        assert_eq!(run.code, 2, "{token}: {}", run.stdout);
        run.assert_error("clawc::secrets::leak", "API_TOKEN");
        assert!(!pod.out_exists(), "{token}: written");
        assert_silent_about(&run, token);
    }
}

#[test]
fn diffs_mask_short_and_escaped_tokens() {
    for token in ["ab&c", "x<y>z\"q", "tok&secret-0123"] {
        let desc = http_descriptor(&["a"])
            .replace("\"description\":\"svc\"", "\"description\":\"svc\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}");
        let pod = Pod::new("services:\n  bot:\n    environment: {API_TOKEN: \"${API_TOKEN}\"}\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n")
            .file("api/.claw-describe.json", &desc)
            .file(".env", &format!("API_TOKEN='{token}'\n"));
        assert_eq!(pod.compile(&["--secrets", "inline"]).code, 0);
        let escaped = serde_json::to_string(token).unwrap();
        let go = escaped.trim_matches('"').replace('&', "\\u0026").replace('<', "\\u003c").replace('>', "\\u003e");
        for format in ["human", "json"] {
            let run = human(&pod, &["compile", "claw-pod.yml", "-o", "out", "--check", "--diff", "full", "--format", format]);
            assert_eq!(run.code, 1, "{}", run.stdout);
            for form in [token, escaped.trim_matches('"'), go.as_str()] {
                assert_silent_about(&run, form);
            }
        }
    }
}

#[test]
fn dotenv_diagnostics_never_quote_the_file() {
    let pod = pod().file(".env", &format!("\u{feff}API_TOKEN={CANARY}\nthis line is broken\nOTHER={CANARY}2\n"));
    let run = human(&pod, &["compile", "claw-pod.yml", "-o", "out"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("clawc::pod::env") || run.stderr.contains(".env:2"), "{}", run.stderr);
    assert!(run.stderr.contains(".env:2"), "{}", run.stderr);
    assert_silent_about(&run, CANARY);
    assert!(!run.stderr.contains("API_TOKEN` is not"), "the BOM made the first key invalid: {}", run.stderr);
}

#[test]
fn the_lock_of_an_inline_tree_is_no_oracle() {
    let pod = pod().file(".env", "API_TOKEN=tok-0123456789\n");
    pod.edit_pod("environment: [API_TOKEN]", "environment: {API_TOKEN: \"${API_TOKEN}\"}");
    assert_eq!(pod.compile(&["--secrets", "inline"]).code, 0);
    let inline = std::fs::read(pod.path("out/context/bot/tools.json")).unwrap();
    let lock: serde_json::Value = serde_json::from_str(&pod.read("out/clawc.lock")).unwrap();
    let recorded = lock["outputs"].as_array().unwrap().iter().find(|o| o["path"] == "context/bot/tools.json").unwrap()["sha256"].clone();
    assert_ne!(recorded, sha256(&inline), "the lock confirms the inline token");
    let redacted = String::from_utf8(inline).unwrap().replace("tok-0123456789", "${API_TOKEN}");
    assert_eq!(recorded, sha256(redacted.as_bytes()));
    let mode = std::fs::metadata(pod.path("out/clawc.lock")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Going back to redact deletes nothing it should not and rewrites the token files.
    assert_eq!(pod.compile(&[]).code, 0);
    assert!(pod.read("out/context/bot/tools.json").contains("${API_TOKEN}"));
}

/// Runs `clawc <args>` in `dir`, failing the test if it takes longer than 20 s (a hang).
fn bounded(dir: &Path, args: &[&str]) -> Run {
    use std::io::Read;
    let mut child =
        clawc().current_dir(dir).args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("clawc {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    Run { code: status.code().unwrap_or(-1), stdout, stderr }
}

pub(super) fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

const DESCRIBED: &str = "services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    image: api:1\n    x-claw:\n      describe-file: DESC\n";

/// A repository (`.git` at its top) with the pod in `pod/`, and a canary file beside the
/// repository that no input may reach.
fn repo(desc_path: &str) -> (tempfile::TempDir, Pod) {
    let outer = tempfile::tempdir().unwrap();
    std::fs::write(outer.path().join("canary.json"), format!("{{\"secret\": \"{CANARY}\"\n")).unwrap();
    let pod = Pod::new("").file(".git/HEAD", "ref: refs/heads/main\n").file("pod/claw-pod.yml", &DESCRIBED.replace("DESC", desc_path));
    (outer, pod)
}

#[test]
fn inputs_stay_inside_the_repository() {
    let (outer, pod) = repo("/dev/null");
    let canary = outer.path().join("canary.json");
    type Setup<'a> = Box<dyn Fn(&Pod) + 'a>;
    let cases: Vec<(String, Setup, &str)> = vec![
        // An absolute path out of the repository, written in the pod.
        (canary.display().to_string(), Box::new(|_| {}), "clawc::source::path_escape"),
        // A committed symlink leading out.
        ("link.json".into(), Box::new(|p: &Pod| symlink(&canary, p.path("pod/link.json")).unwrap()), "clawc::source::path_escape"),
        // A FIFO (reading it would block forever) and a device.
        ("fifo.json".into(), Box::new(|p: &Pod| mkfifo(&p.path("pod/fifo.json"))), "clawc::source::not_a_file"),
        ("zero.json".into(), Box::new(|p: &Pod| symlink("/dev/zero", p.path("pod/zero.json")).unwrap()), "clawc::source::path_escape"),
        // A NUL byte in the path is invalid input, not an I/O failure.
        ("a\\0b.json".into(), Box::new(|_| {}), "clawc::source::invalid_path"),
        // A symlink loop.
        ("loop.json".into(), Box::new(|p: &Pod| symlink("loop.json", p.path("pod/loop.json")).unwrap()), "clawc::source::path_escape"),
    ];
    for (path, setup, code) in cases {
        let yaml = DESCRIBED.replace("DESC", &format!("\"{path}\""));
        std::fs::write(pod.path("pod/claw-pod.yml"), yaml).unwrap();
        setup(&pod);
        let run = bounded(&pod.path("pod"), &["compile", "claw-pod.yml", "-o", "out", "--format", "json"]);
        assert_eq!(run.code, 2, "{path}: {}", run.stdout);
        run.assert_error(code, "");
        assert_silent_about(&run, CANARY);
        assert!(!pod.path("pod/out").exists());
        // The human rendering quotes no source from the file either.
        let run = bounded(&pod.path("pod"), &["compile", "claw-pod.yml", "-o", "out"]);
        assert_silent_about(&run, CANARY);
    }
    // --root widens the root on purpose.
    let yaml = DESCRIBED.replace("DESC", &canary.display().to_string());
    std::fs::write(pod.path("pod/claw-pod.yml"), yaml).unwrap();
    let run = bounded(&pod.path("pod"), &["compile", "claw-pod.yml", "-o", "out", "--format", "json", "--root", "/"]);
    assert!(run.codes().iter().all(|c| c != "clawc::source::path_escape"), "{}", run.stdout);
}

#[test]
fn the_env_file_and_the_pod_file_are_confined_too() {
    let (outer, pod) = repo("d.json");
    std::fs::write(outer.path().join("env"), format!("API_TOKEN={CANARY}\n")).unwrap();
    symlink(outer.path().join("env"), pod.path("pod/.env")).unwrap();
    let run = bounded(&pod.path("pod"), &["compile", "claw-pod.yml", "-o", "out", "--format", "json"]);
    assert_eq!(run.code, 2);
    run.assert_error("clawc::source::path_escape", ".env");
    assert_silent_about(&run, CANARY);
    std::fs::remove_file(pod.path("pod/.env")).unwrap();
    std::fs::rename(pod.path("pod/claw-pod.yml"), outer.path().join("claw-pod.yml")).unwrap();
    symlink(outer.path().join("claw-pod.yml"), pod.path("pod/claw-pod.yml")).unwrap();
    let run = bounded(&pod.path("pod"), &["compile", "claw-pod.yml", "-o", "out", "--format", "json"]);
    assert_eq!(run.code, 2);
    run.assert_error("clawc::source::path_escape", "claw-pod.yml");
}

#[test]
fn the_build_context_descriptor_may_not_lead_out_of_the_context() {
    let pod = Pod::new("services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("outside.json", &http_descriptor(&["t"]))
        .file("api/Dockerfile", "FROM scratch\n");
    symlink(pod.path("outside.json"), pod.path("api/.claw-describe.json")).unwrap();
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_error("clawc::source::path_escape", ".claw-describe.json");
    assert!(!pod.out_exists());
}

#[test]
fn a_hostile_lock_cannot_make_check_hang_or_read_outside() {
    let pod = pod();
    compiled(&pod);
    mkfifo(&pod.path("fifo"));
    let lock_path = pod.path("out/clawc.lock");
    let mut lock: serde_json::Value = serde_json::from_slice(&std::fs::read(&lock_path).unwrap()).unwrap();
    for p in ["fifo", "/dev/zero", "../../../../../../proc/self/environ"] {
        lock["inputs"].as_array_mut().unwrap().push(serde_json::json!({ "path": p, "role": "pod", "sha256": null }));
    }
    std::fs::write(&lock_path, serde_json::to_vec(&lock).unwrap()).unwrap();
    let run = bounded(pod.dir.path(), &["compile", "claw-pod.yml", "-o", "out", "--check", "--format", "json"]);
    // The forged lock is not believed: the check compiles and finds the lock itself differs.
    assert_eq!(run.code, 1, "{}", run.stdout);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["answered_by"], "compile");
    // A committed lock that is a FIFO is drift, never opened.
    std::fs::remove_file(&lock_path).unwrap();
    mkfifo(&lock_path);
    let run = bounded(pod.dir.path(), &["compile", "claw-pod.yml", "-o", "out", "--check", "--format", "json"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
}

#[test]
fn a_tree_from_an_older_clawc_loses_its_manifest_and_check_says_so() {
    let pod = pod();
    compiled(&pod);
    std::fs::write(pod.path("out/.clawc-manifest.json"), "{\"generator\": \"clawc\", \"files\": [\"report.json\"]}").unwrap();
    let run = pod.compile(&["--check"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("\"path\": \".clawc-manifest.json\""), "{}", run.stdout);
    assert_eq!(pod.compile(&[]).code, 0);
    assert!(!pod.path("out/.clawc-manifest.json").exists());
    assert_eq!(pod.compile(&["--check"]).code, 0);
}

#[test]
fn describe_prints_no_escape_sequence_from_a_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let desc = r#"{"version": 2, "description": "evil \u001b]0;pwned\u0007 title", "tools": [{"name": "t", "description": "a \u001b[2J clear", "inputSchema": {"type": "object"}, "http": {"method": "GET", "path": "/t"}}]}"#;
    std::fs::write(dir.path().join("d.json"), desc).unwrap();
    let run = bounded(dir.path(), &["describe", "d.json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{7}'), "raw control characters printed: {:?}", run.stdout);
    assert!(run.stdout.contains("evil \\u{1b}]0;pwned\\u{7} title"), "{}", run.stdout);
    assert!(run.stdout.contains("a \\u{1b}[2J clear"), "{}", run.stdout);
}

#[test]
fn describe_of_a_fifo_or_a_symlinked_build_skill_neither_hangs_nor_leaves_the_context() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("d.json"));
    let run = bounded(dir.path(), &["describe", "d.json", "--format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stdout.contains("clawc::source::not_a_file"), "{}", run.stdout);
    // A build context whose descriptor's skill is a symlink out of the context.
    std::fs::write(dir.path().join("secret.md"), "outside the context").unwrap();
    std::fs::create_dir(dir.path().join("ctx")).unwrap();
    let desc = r#"{"version": 1, "description": "svc", "skill": "skill.md"}"#;
    std::fs::write(dir.path().join("ctx/.claw-describe.json"), desc).unwrap();
    std::os::unix::fs::symlink("../secret.md", dir.path().join("ctx/skill.md")).unwrap();
    let run = bounded(dir.path(), &["describe", "ctx", "--format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stdout.contains("clawc::source::path_escape"), "{}", run.stdout);
    assert!(!run.stdout.contains("outside the context"));
}
