//! A compile with nothing to write: when the stat record a compile on this machine bound
//! to the lock vouches for every input and output, `clawc compile` prints what a compile
//! prints without compiling. It writes nothing, and it is not answered that way when a
//! compile would write or say more.

use super::harness::{Pod, clawc, http_descriptor, on_every_golden_case, tree};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// `clawc compile claw-pod.yml -o out <extra>` in `dir`, with its caches in `cache` and
/// `env` set: (exit code, stdout, stderr).
fn compile(dir: &Path, cache: &Path, extra: &[&str], env: &[(String, String)]) -> (i32, String, String) {
    let mut c = clawc();
    c.current_dir(dir).env("CLAWC_CACHE_DIR", cache).args(["compile", "claw-pod.yml", "-o", "out"]).args(extra);
    c.envs(env.iter().map(|(k, v)| (k, v)));
    let o = c.output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap())
}

/// The JSON lines printed, with the summary's `reused` left out.
fn without_reused(stdout: &str) -> Vec<serde_json::Value> {
    let mut lines: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for l in &mut lines {
        if let Some(s) = l.get_mut("summary").and_then(serde_json::Value::as_object_mut) {
            s.remove("reused");
        }
    }
    lines
}

/// Every golden case (its own arguments and environment), compiled, then compiled again
/// with nothing changed: in both formats the second compile prints what a compile
/// without the stat record (`--no-cache`, which cannot answer from the lock) prints, but
/// for `reused` (every agent service is taken from the tree), and leaves the tree as it
/// was. Cases with warnings, inline tokens or a skill folder are compiled every time, so
/// their output is the same too.
#[test]
fn a_compile_with_nothing_to_write_prints_what_a_compile_prints() {
    let failures = on_every_golden_case(|case, name| {
        let case = super::reuse::Case::new(case);
        let (work, cache, env) = (case.dir.path(), case.cache.path(), &case.env);
        let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
        if compile(work, cache, &args, env).0 != 0 {
            return None;
        }
        // Past the coarse clock's tick of the compile's writes, so the record vouches.
        std::thread::sleep(Duration::from_millis(50));
        let before = tree(&work.join("out"));
        for format in ["human", "json"] {
            let extra = [&args[..], &["--format", format]].concat();
            let again = compile(work, cache, &extra, env);
            let full = compile(work, cache, &[&extra[..], &["--no-cache"]].concat(), env);
            let same = match format {
                "json" => (again.0, without_reused(&again.1), &again.2) == (full.0, without_reused(&full.1), &full.2),
                _ => again == full,
            };
            if !same {
                return Some(format!("{name} ({format}):\n{again:?}\n{full:?}"));
            }
        }
        (tree(&work.join("out")) != before).then(|| format!("{name}: the tree changed"))
    });
    let failures: Vec<String> = failures.into_iter().flatten().collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn pod() -> Pod {
    let desc = http_descriptor(&["a", "b"])
        .replace("\"description\":\"svc\"", "\"description\":\"svc\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}");
    Pod::new("services:\n  bot:\n    environment: {API_TOKEN: \"${API_TOKEN}\"}\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &desc.replace("does a", "Operation-description-text"))
        .file(".env", "API_TOKEN=tok-secret-0123456789\n")
}

/// [`pod`] compiled with its stat record in a cache of its own, past the coarse clock's
/// tick of the compile's writes: the pod, the cache, and the tree.
fn compiled() -> (Pod, tempfile::TempDir, std::collections::BTreeMap<String, Vec<u8>>) {
    let pod = pod();
    let cache = tempfile::tempdir().unwrap();
    assert_eq!(compile(pod.dir.path(), cache.path(), &[], &[]).0, 0);
    std::thread::sleep(Duration::from_millis(50));
    let before = tree(&pod.path("out"));
    (pod, cache, before)
}

/// `clawc compile` started in `dir` while this process holds the lock of `out`.
fn spawned(dir: &Path, cache: &Path) -> std::process::Child {
    let mut c = clawc();
    c.current_dir(dir).env("CLAWC_CACHE_DIR", cache).args(["compile", "claw-pod.yml", "-o", "out"]);
    c.stdout(std::process::Stdio::piped()).spawn().unwrap()
}

/// Waits up to `limit` for `child`: its exit code and stdout, `None` if it still runs.
fn within(child: &mut std::process::Child, limit: Duration) -> Option<(i32, String)> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
            return Some((status.code().unwrap_or(-1), out));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A compile writes under the lock of `out` (an `flock`), and one with nothing to write
/// reads the tree as a check does, so it answers while another holds the lock; one that
/// must restore a file's mode, or the lock's, waits for the lock and writes.
#[test]
fn nothing_to_write_is_answered_without_the_lock_and_a_changed_mode_is_written() {
    let (pod, cache, before) = compiled();
    let dir = pod.dir.path();
    for file in ["out/context/bot/tools.json", "out/clawc.lock"] {
        let held = std::fs::File::open(pod.path("out")).unwrap();
        rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
        let mut answered = spawned(dir, cache.path());
        let (code, said) = within(&mut answered, Duration::from_secs(60)).expect("a compile with nothing to write waited for the lock");
        assert_eq!((code, said.as_str()), (0, "compiled 1 agent into out: 0 written, 5 unchanged, 0 removed\n"));
        std::fs::set_permissions(pod.path(file), std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut waiting = spawned(dir, cache.path());
        assert_eq!(within(&mut waiting, Duration::from_secs(1)), None, "{file}: a compile that writes took no lock");
        drop(held);
        let (code, said) = within(&mut waiting, Duration::from_secs(60)).unwrap();
        assert_eq!((code, said.as_str()), (0, "compiled 1 agent into out: 1 written, 4 unchanged, 0 removed\n"), "{file}");
        assert_eq!(mode(&pod.path(file)), 0o644, "{file}");
        assert!(tree(&pod.path("out")) == before, "{file}: the tree changed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A pod saved again with the same bytes (its stamp newer than the record) is still
/// answered from the lock, without waiting for the lock of `out`: the first look for an
/// edited pod compares its bytes with those the record's copy of the lock names, not only
/// its stamp. A pod edited is compiled (it waits for the lock, and writes the lock anew).
#[test]
fn a_pod_saved_unchanged_is_answered_from_the_lock_and_an_edited_one_compiled() {
    let (pod, cache, before) = compiled();
    let dir = pod.dir.path();
    std::fs::write(pod.path("claw-pod.yml"), pod.read("claw-pod.yml")).unwrap();
    let held = std::fs::File::open(pod.path("out")).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let mut answered = spawned(dir, cache.path());
    let (code, said) = within(&mut answered, Duration::from_secs(60)).expect("a pod saved unchanged was compiled");
    assert_eq!((code, said.as_str()), (0, "compiled 1 agent into out: 0 written, 5 unchanged, 0 removed\n"));
    pod.edit_pod("tools: [api]", "tools: [api] ");
    let mut waiting = spawned(dir, cache.path());
    assert_eq!(within(&mut waiting, Duration::from_secs(1)), None, "an edited pod was answered from the lock");
    drop(held);
    let (code, said) = within(&mut waiting, Duration::from_secs(60)).unwrap();
    assert_eq!((code, said.as_str()), (0, "compiled 1 agent into out: 1 written, 4 unchanged, 0 removed\n"));
    let after = tree(&pod.path("out"));
    assert!(after.iter().all(|(f, b)| f == "clawc.lock" || before.get(f) == Some(b)), "only the lock changed");
}

/// The pod swapped after a compile for a FIFO, or for a symlink to a file outside the
/// repository (newer than the stat record, so the first look for an edited pod looks at
/// it): the compile does not hang, refuses it as it refuses any such pod, and leaves the
/// tree as it was.
#[test]
fn a_pod_swapped_for_a_fifo_or_a_symlink_out_is_refused_and_the_tree_kept() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("claw-pod.yml"), "services: {}\n").unwrap();
    type Swap = fn(&Path, &Path);
    let swaps: [(&str, Swap); 2] = [
        ("clawc::source::not_a_file", |pod, _| super::hostile::mkfifo(pod)),
        ("clawc::source::path_escape", |pod, outside| std::os::unix::fs::symlink(outside.join("claw-pod.yml"), pod).unwrap()),
    ];
    for (code, swap) in swaps {
        let (pod, cache, before) = compiled();
        std::fs::remove_file(pod.path("claw-pod.yml")).unwrap();
        swap(&pod.path("claw-pod.yml"), outside.path());
        let mut child = clawc()
            .current_dir(pod.dir.path())
            .env("CLAWC_CACHE_DIR", cache.path())
            .args(["compile", "claw-pod.yml", "-o", "out", "--format", "json"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (exit, said) = within(&mut child, Duration::from_secs(60)).unwrap_or_else(|| {
            let _ = child.kill();
            panic!("{code}: the compile hung")
        });
        assert_eq!(exit, 2, "{said}");
        assert!(said.contains(code), "{code}: {said}");
        assert!(tree(&pod.path("out")) == before, "{code}: the tree changed");
    }
}

/// A token value the tree holds is a leak a compile refuses (the tree left as it was),
/// one too short to look for is a warning a compile prints every time, and so is a `.env`
/// line that is not `KEY=VALUE` (`.env` is not an input the lock hashes): none is
/// answered from the lock.
#[test]
fn a_token_in_the_tree_or_too_short_to_look_for_is_left_to_the_compile() {
    let (pod, cache, before) = compiled();
    let dir = pod.dir.path();
    for value in ["Operation-description-text", "short"] {
        let env = [("API_TOKEN".to_string(), value.to_string())];
        for _ in 0..2 {
            let (code, stdout, stderr) = compile(dir, cache.path(), &[], &env);
            let said = format!("{stdout}{stderr}");
            match value {
                "short" => assert!(code == 0 && said.contains("clawc::secrets::too_short_to_scan"), "{said}"),
                _ => assert!(code != 0 && said.contains("clawc::secrets::leak"), "{said}"),
            }
            if value != "short" {
                assert!(!said.contains(value), "the token was printed: {said}");
            }
        }
        if value != "short" {
            assert!(tree(&pod.path("out")) == before, "the tree changed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The tree as at first (its report without the warning), then a line in error.
    assert_eq!(compile(dir, cache.path(), &[], &[]).0, 0);
    std::thread::sleep(Duration::from_millis(50));
    assert!(tree(&pod.path("out")) == before, "the tree is not as at first");
    std::fs::write(pod.path(".env"), "API_TOKEN=tok-secret-0123456789\nnot a line\n").unwrap();
    for _ in 0..2 {
        let (code, stdout, stderr) = compile(dir, cache.path(), &[], &[]);
        assert!(code == 2 && format!("{stdout}{stderr}").contains("clawc::env::bad_line"), "{stdout}{stderr}");
    }
}

/// An output swapped for a symlink to a file outside `--out` holding the same bytes, or for
/// a FIFO: the compile with nothing to write neither reads through nor waits on either, and
/// is not answered from the lock; the compile puts a file of its own in its place and
/// leaves the file outside as it was.
#[test]
fn an_output_swapped_for_a_symlink_or_a_fifo_is_never_answered_from_the_lock() {
    for swap in ["symlink", "fifo"] {
        let (pod, cache, before) = compiled();
        let tools = pod.path("out/context/bot/tools.json");
        let outside = pod.path("outside.json");
        std::fs::write(&outside, &before["context/bot/tools.json"]).unwrap();
        std::fs::remove_file(&tools).unwrap();
        match swap {
            "symlink" => std::os::unix::fs::symlink(&outside, &tools).unwrap(),
            _ => super::hostile::mkfifo(&tools),
        }
        let mut run = spawned(pod.dir.path(), cache.path());
        let (code, said) = within(&mut run, Duration::from_secs(60)).expect("the compile hung");
        assert_eq!((code, said.as_str()), (0, "compiled 1 agent into out: 1 written, 4 unchanged, 0 removed\n"), "{swap}");
        assert!(std::fs::symlink_metadata(&tools).unwrap().is_file(), "{swap}: not replaced by a file");
        assert!(tree(&pod.path("out")) == before, "{swap}: the tree is not the compile's");
        assert_eq!(std::fs::read(&outside).unwrap(), before["context/bot/tools.json"], "{swap}: written through");
    }
}

/// A token value the tree holds in the encodings clawc writes (Go's HTML-escaped JSON in
/// `tools.json`, `<` as `\u003c`; as written in `CLAWDAPUS.md`) is a leak the compile
/// reports, never answered from the lock (`secrets::Finder` looks for every encoding:
/// its unit test).
#[test]
fn a_token_the_tree_holds_escaped_is_left_to_the_compile() {
    let desc = http_descriptor(&["a"]).replace("does a", "Operation<description>text");
    let pod = pod().file(
        "api/.claw-describe.json",
        &desc.replace("\"description\":\"svc\"", "\"description\":\"svc\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}"),
    );
    let cache = tempfile::tempdir().unwrap();
    assert_eq!(compile(pod.dir.path(), cache.path(), &[], &[]).0, 0);
    std::thread::sleep(Duration::from_millis(50));
    assert!(pod.read("out/context/bot/tools.json").contains("Operation\\u003cdescription\\u003etext"), "not escaped in the tree");
    let before = tree(&pod.path("out"));
    let env = [("API_TOKEN".to_string(), "Operation<description>text".to_string())];
    for _ in 0..2 {
        let (code, stdout, stderr) = compile(pod.dir.path(), cache.path(), &[], &env);
        let said = format!("{stdout}{stderr}");
        assert!(code != 0 && said.contains("clawc::secrets::leak"), "{said}");
        assert!(!said.contains("Operation<description>text") && !said.contains("\\u003cdescription"), "the token was printed: {said}");
    }
    assert!(tree(&pod.path("out")) == before, "the tree changed");
}
