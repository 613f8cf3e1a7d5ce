//! Writing: only changed files, stale files removed, foreign files untouched, failed
//! compiles leave the previous tree alone, token files 0600.

use super::harness::{Pod, forge, http_descriptor};
use std::os::unix::fs::{MetadataExt, PermissionsExt};

fn pod() -> Pod {
    let desc = http_descriptor(&["a", "b"])
        .replace("\"description\":\"svc\"", "\"description\":\"svc\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}");
    Pod::new("services:\n  bot:\n    environment: [API_TOKEN]\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n").file("api/.claw-describe.json", &desc)
}

#[test]
fn rewrites_only_what_changed_and_removes_stale_files() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    let tools_ino = std::fs::metadata(pod.path("out/context/bot/tools.json")).unwrap().ino();
    std::fs::write(pod.path("out/mine.txt"), "not clawc's").unwrap();
    let run = pod.compile(&[]);
    let summary: serde_json::Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["written"].as_array().unwrap().len(), 0, "{}", run.stdout);
    assert_eq!(std::fs::metadata(pod.path("out/context/bot/tools.json")).unwrap().ino(), tools_ino, "unchanged file was rewritten");
    // Rename the agent: its old context is stale and goes; the foreign file stays.
    pod.edit_pod("  bot:", "  robot:");
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(!pod.path("out/context/bot").exists(), "stale context dir left behind");
    assert!(pod.path("out/context/robot/tools.json").exists());
    assert_eq!(pod.read("out/mine.txt"), "not clawc's");
}

#[test]
fn a_failed_compile_leaves_the_previous_tree() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    let before = super::harness::tree(&pod.path("out"));
    pod.edit_pod("tools: [api]", "tools: [apii]");
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2);
    run.assert_error("clawc::grant::unknown_tool_service", "\"apii\"");
    assert!(run.assert_error("clawc::grant::unknown_tool_service", "apii")["help"].as_str().unwrap().contains("did you mean `api`"));
    assert_eq!(super::harness::tree(&pod.path("out")), before);
}

#[test]
fn inline_tokens_are_0600_and_redacted_by_default() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0, "redact needs only the declaration");
    assert!(pod.read("out/context/bot/tools.json").contains("\"token\": \"${API_TOKEN}\""));
    let run = pod.run_with_env(&["--secrets", "inline"], &[]);
    assert_eq!(run.code, 2, "inline needs a value");
    run.assert_error(
        "clawc::grant::auth_env",
        "service env passes \"API_TOKEN\" through without a value, and neither .env nor the environment sets it",
    );
    let pod = pod.file(".env", "API_TOKEN=tok-0123456789\n");
    pod.edit_pod("environment: [API_TOKEN]", "environment: {API_TOKEN: \"${API_TOKEN}\"}");
    let run = pod.run_with_env(&["--secrets", "inline"], &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(pod.read("out/context/bot/tools.json").contains("\"token\": \"tok-0123456789\""));
    let mode = std::fs::metadata(pod.path("out/context/bot/tools.json")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let md = std::fs::metadata(pod.path("out/context/bot/CLAWDAPUS.md")).unwrap().permissions().mode() & 0o777;
    assert_eq!(md, 0o644);
    // Back to redact: the token file is rewritten without the value, and 0644.
    assert_eq!(pod.compile(&[]).code, 0);
    assert!(!pod.read("out/context/bot/tools.json").contains("tok-0123456789"));
    let mode = std::fs::metadata(pod.path("out/context/bot/tools.json")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
    // The process environment overlays .env.
    let run = pod.run_with_env(&["--secrets", "inline"], &[("API_TOKEN", "from-process-env-1")]);
    assert_eq!(run.code, 0);
    assert!(pod.read("out/context/bot/tools.json").contains("from-process-env-1"));
}

/// A recompile takes a file as current without reading it only when the previous lock has
/// its new hash and the stat record vouches for it; a file edited behind clawc's back
/// (same size, old mtime) is read and rewritten.
#[test]
fn a_recompile_reads_only_files_whose_stamp_changed() {
    use clawc::output::write::{WriteOptions, write_tree_with};
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
    let compiled = clawc::compile(&clawc::Options { pod: example.join("claw-pod.yml"), ..Default::default() });
    let artifacts = compiled.artifacts.as_ref().expect("the example compiles");
    let dir = tempfile::tempdir().unwrap();
    let (out, records) = (dir.path().join("out"), dir.path().join("cache/check/v1"));
    let write = |records: Option<&std::path::Path>| {
        let summary = write_tree_with(&out, artifacts, &compiled.secrets, WriteOptions { records, ..Default::default() }).unwrap();
        // Past the kernel's coarse clock tick: a file stamped in the record's own tick is
        // never vouched for (racy git).
        std::thread::sleep(std::time::Duration::from_millis(50));
        summary
    };
    let all = artifacts.0.len();
    assert_eq!(write(Some(&records)).written.len(), all);
    write(Some(&records));
    let third = write(Some(&records));
    // clawc.lock itself is not an output the lock lists: given whole, as here, the record
    // keeps no copy of it, so it is read.
    assert_eq!((third.written.len(), third.unchanged, third.vouched), (0, all, all - 1));
    assert_eq!(write(None).vouched, 0, "without records (--no-cache) every file is read");
    let rel = "context/trader/tools.json";
    forge(&out.join(rel), false);
    let fourth = write(Some(&records));
    assert_eq!(fourth.written.to_vec(), [rel]);
    assert_eq!(std::fs::read(out.join(rel)).unwrap(), *artifacts.0[rel].bytes);
    // A record in the input root or inside --out is neither read nor written.
    for inside in [out.join("records"), example.join("target-records")] {
        let summary = write_tree_with(
            &out,
            artifacts,
            &compiled.secrets,
            WriteOptions { records: Some(&inside), untrusted: &[&example], ..Default::default() },
        )
        .unwrap();
        assert_eq!(summary.vouched, 0);
        assert!(!inside.exists(), "{}", inside.display());
    }
}

/// A compile writes the tree as it goes, a batch of agent services at a time (512 agent
/// ids); a leak found in a later batch still leaves nothing behind: no `--out` when there
/// was none, and the previous tree byte for byte, with no staging, when there was one
/// (the first batch's changed files had been staged). A file clawc may not replace in the
/// first batch does not hide the leak: the compile's own errors come first.
#[test]
fn a_leak_in_a_later_batch_leaves_nothing_written() {
    use super::determinism::generate::generate;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // 60 agent services: in name order the last, agent-9, is in the second batch; its
    // surface, tools-10, is no other agent's.
    generate(root, 60);
    let secret = "leaked-token-value-0123456789";
    let compile = |out: &str| {
        super::harness::clawc()
            .current_dir(root)
            .env("TOKEN_10", secret)
            .args(["compile", "claw-pod.yml", "--format", "json", "-o", out])
            .output()
            .unwrap()
    };
    let edit = |file: &str, from: &str, to: &str| {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(text.contains(from), "{file} holds {from:?}");
        std::fs::write(root.join(file), text.replacen(from, to, 1)).unwrap();
    };
    // A tree to keep, compiled before agent-0's grant changes (its files, in the first
    // batch, are then staged anew).
    let o = compile("kept");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    let before = super::harness::tree(&root.join("kept"));
    edit("claw-pod.yml", "allow: [op_0, op_1, op_2", "allow: [op_0, op_2");
    edit(
        "svc/tools-10/.claw-describe.json",
        "\"description\":\"Tool service 10\"",
        &format!("\"description\":\"Tool service 10 ({secret})\""),
    );
    // A file of someone else's where the first batch writes.
    std::fs::create_dir_all(root.join("foreign/context/agent-0-0")).unwrap();
    std::fs::write(root.join("foreign/context/agent-0-0/CLAWDAPUS.md"), "mine").unwrap();
    for out in ["fresh", "kept", "foreign"] {
        let o = compile(out);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(2), "{out}: {stdout}");
        assert!(stdout.contains("clawc::secrets::leak") && stdout.contains("would be written to `context/agent-9-"), "{out}: {stdout}");
        assert!(!stdout.contains("clawc::output::"), "{out}: the compile's error comes first: {stdout}");
        assert!(!stdout.contains(secret) && !String::from_utf8_lossy(&o.stderr).contains(secret));
        assert!(!root.join(out).join(".clawc-stage").exists(), "{out}: staging left behind");
    }
    assert!(!root.join("fresh").exists(), "a failed compile made its --out");
    assert!(super::harness::tree(&root.join("kept")) == before, "the previous tree changed");
    assert_eq!(std::fs::read_to_string(root.join("foreign/context/agent-0-0/CLAWDAPUS.md")).unwrap(), "mine");
    assert_eq!(super::harness::tree(&root.join("foreign")).len(), 1, "only the foreign file");
}

/// Run with its standard descriptors closed (clawc, started at the C runtime's `main`,
/// opens `/dev/null` in their place as Rust's start-up would), compiling and checking
/// work as ever: nothing printed reaches the tree or the pod, drift is still found.
#[test]
fn closed_standard_descriptors_change_nothing_clawc_writes() {
    let pod = pod();
    assert_eq!(pod.compile(&[]).code, 0);
    let want = super::harness::tree(&pod.path("out"));
    let pod_yaml = pod.read("claw-pod.yml");
    std::fs::remove_dir_all(pod.path("out")).unwrap();
    let closed = |extra: &[&str]| {
        let harness = super::harness::clawc();
        let mut c = std::process::Command::new("sh");
        c.env_clear().envs(harness.get_envs().filter_map(|(k, v)| Some((k, v?)))).current_dir(pod.dir.path());
        c.args(["-c", "exec 0<&- 1>&- 2>&- \"$0\" \"$@\"", env!("CARGO_BIN_EXE_clawc")]);
        c.args(["compile", "claw-pod.yml", "-o", "out", "--format", "json"]).args(extra);
        let o = c.output().unwrap();
        assert!(o.stdout.is_empty() && o.stderr.is_empty(), "printed through a closed descriptor");
        o.status.code()
    };
    assert_eq!(closed(&[]), Some(0));
    assert_eq!(super::harness::tree(&pod.path("out")), want, "the tree holds only what was compiled");
    assert_eq!(closed(&["--check"]), Some(0));
    assert_eq!(closed(&["--check", "--no-cache"]), Some(0));
    std::fs::write(pod.path("out/context/bot/CLAWDAPUS.md"), "edited").unwrap();
    assert_eq!(closed(&["--check"]), Some(1), "drift is still drift");
    assert_eq!(pod.read("claw-pod.yml"), pod_yaml);
    assert_eq!(closed(&[]), Some(0));
    assert_eq!(super::harness::tree(&pod.path("out")), want);
}

/// A compile runs on mimalloc (which reserves its arena at the first allocation, as
/// `MIMALLOC_VERBOSE=1` shows), a `--check` on glibc's allocator (mimalloc is loaded but
/// serves nothing): `allocator::for_args` as the binary applies it.
#[test]
fn a_compile_runs_on_mimalloc_and_a_check_on_glibc() {
    let pod = pod();
    let served = |args: &[&str]| {
        let mut c = super::harness::clawc();
        c.current_dir(pod.dir.path()).env("MIMALLOC_VERBOSE", "1");
        let o = c.args(["compile", "claw-pod.yml", "-o", "out"]).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let stderr = String::from_utf8(o.stderr).unwrap();
        assert!(stderr.contains("mimalloc: process init"), "mimalloc's verbose output: {stderr}");
        stderr.lines().any(|l| l.starts_with("mimalloc: reserved"))
    };
    assert!(served(&[]), "a compile allocates with mimalloc");
    assert!(!served(&["--check"]), "a check does not");
}

/// Past its budget (`WriteOptions::held`) a compile keeps the list of its outputs on disk,
/// as sorted runs in an unnamed file in `--out`. The tree and its lock are the same bytes
/// as with the list held whole, nothing of the runs is left in `--out`, and the stat record
/// and memo made from the list let the next compile take every file from the tree unread.
#[test]
fn a_list_of_outputs_kept_on_disk_makes_the_same_tree_and_leaves_nothing_else() {
    use clawc::output::write::{WriteOptions, Writer};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    super::determinism::generate::generate(root, 12);
    let records = root.join("cache");
    let opts = clawc::Options { pod: root.join("claw-pod.yml"), ..Default::default() };
    let compile = |out: &str, held: usize| {
        let write = WriteOptions { records: Some(&records), held, ..Default::default() };
        let out = root.join(out);
        let mut writer = Writer::new(&out, write, true);
        let (compiled, failed) = clawc::compile_into(&opts, &mut writer);
        assert!(compiled.exit_code() == 0 && failed.is_none(), "{:?} {failed:?}", compiled.diagnostics.0.first());
        let summary = writer.finish(&compiled.secrets).unwrap();
        // Past the coarse clock's tick, so the record may vouch for what was written.
        std::thread::sleep(std::time::Duration::from_millis(50));
        summary
    };
    let whole = compile("whole", usize::MAX);
    // A few hundred bytes: a run every few outputs.
    let spilled = compile("spilled", 300);
    assert!(whole.written.len() > 30, "{}", whole.written.len());
    assert_eq!(spilled.written, whole.written);
    let want = super::harness::tree(&root.join("whole"));
    assert_eq!(super::harness::tree(&root.join("spilled")), want, "the same tree and lock, nothing more");
    // The second compile stamps anew what the first wrote in the record's own clock tick
    // (never vouched for: racy git); the third finds the record vouching for all.
    assert_eq!(compile("spilled", 300).written.len(), 0);
    let again = compile("spilled", 300);
    assert_eq!((again.written.len(), again.unchanged), (0, want.len()));
    assert_eq!(again.vouched, want.len(), "every output vouched for by the record, the lock by its copy");
    assert!(again.reused > 0, "services taken through the memo, looked up in the previous lock's table on disk");
    assert_eq!(super::harness::tree(&root.join("spilled")), want);
    // An edit that drops agent ids: their files are found stale in the previous lock's
    // table on disk and deleted, as from a held one.
    let pod = std::fs::read_to_string(root.join("claw-pod.yml")).unwrap();
    std::fs::write(root.join("claw-pod.yml"), pod.replacen("      count: 10\n", "      count: 2\n", 1)).unwrap();
    let (held, on_disk) = (compile("whole", usize::MAX), compile("spilled", 300));
    assert!(held.removed.len() >= 8 * 3, "{:?}", held.removed);
    assert_eq!((&on_disk.written, &on_disk.removed, on_disk.unchanged), (&held.written, &held.removed, held.unchanged));
    assert_eq!(super::harness::tree(&root.join("spilled")), super::harness::tree(&root.join("whole")));
}

/// `report.json` past the writer's budget is never held: made once to be scanned and
/// hashed, and again only as it is written. It comes out the same bytes as a held one,
/// is not rewritten while it is unchanged, is made again where it was edited (even to the
/// same length), is refused where a file of someone else's is, and its leak is found
/// before anything is written.
#[test]
fn an_index_too_long_to_hold_is_made_as_it_is_written_and_only_where_it_changes() {
    use clawc::output::write::{WriteOptions, Writer};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    super::determinism::generate::generate(root, 12);
    let records = root.join("cache");
    let compile = |out: &str, held: usize, env: &[(&str, &str)]| {
        let opts = clawc::Options {
            pod: root.join("claw-pod.yml"),
            process_env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Default::default()
        };
        let write = WriteOptions { records: Some(&records), held, ..Default::default() };
        let out = root.join(out);
        let mut writer = Writer::new(&out, write, true);
        let (compiled, failed) = clawc::compile_into(&opts, &mut writer);
        let summary = if compiled.exit_code() == 0 && failed.is_none() { Some(writer.finish(&compiled.secrets)) } else { None };
        std::thread::sleep(std::time::Duration::from_millis(50));
        (compiled, failed, summary)
    };
    let written = |out: &str, held: usize| {
        let (compiled, failed, summary) = compile(out, held, &[]);
        assert!(failed.is_none(), "{:?} {failed:?}", compiled.diagnostics.0.first());
        summary.expect("compiled").expect("written")
    };
    let index = |out: &str| std::fs::read(root.join(out).join("report.json")).unwrap();
    written("held", usize::MAX);
    let first = written("streamed", 300);
    assert!(first.written.to_vec().iter().any(|p| p == "report.json"), "{:?}", first.written);
    assert_eq!(index("streamed"), index("held"));
    let ino = std::fs::metadata(root.join("streamed/report.json")).unwrap().ino();
    for _ in 0..2 {
        let again = written("streamed", 300);
        assert!(!again.written.to_vec().iter().any(|p| p == "report.json"), "{:?}", again.written);
    }
    assert_eq!(std::fs::metadata(root.join("streamed/report.json")).unwrap().ino(), ino, "an unchanged index is not rewritten");
    // Edited to the same length: its length and mode agree, its hash does not.
    let mut edited = index("held");
    let at = edited.iter().position(|&b| b == b'"').unwrap() + 1;
    edited[at] ^= 0x20;
    std::fs::write(root.join("streamed/report.json"), &edited).unwrap();
    let mended = written("streamed", 300);
    assert_eq!(mended.written.to_vec(), vec!["report.json".to_string()]);
    assert_eq!(index("streamed"), index("held"));
    assert_eq!(super::harness::tree(&root.join("streamed")), super::harness::tree(&root.join("held")), "nothing else left");
    // A file of someone else's where the index goes, in a directory clawc never wrote.
    std::fs::create_dir(root.join("foreign")).unwrap();
    std::fs::write(root.join("foreign/report.json"), "mine").unwrap();
    let (_, failed, _) = compile("foreign", 300, &[]);
    let failed = failed.expect("refused");
    assert!(["clawc::output::not_owned", "clawc::output::lock_unreadable"].contains(&failed.code.as_str()), "{failed:?}");
    assert_eq!(std::fs::read_dir(root.join("foreign")).unwrap().count(), 1, "nothing written beside it");
    assert_eq!(std::fs::read(root.join("foreign/report.json")).unwrap(), b"mine");
    // The same bytes found there unowned are taken as the index.
    std::fs::write(root.join("foreign/report.json"), index("held")).unwrap();
    written("foreign", 300);
    assert_eq!(super::harness::tree(&root.join("foreign")), super::harness::tree(&root.join("held")));
    // A token whose value is the pod's name would land in the index: found as it is made,
    // the same diagnostics as from a held index, and nothing written.
    let pod = std::fs::read_to_string(root.join("claw-pod.yml")).unwrap();
    std::fs::write(root.join("claw-pod.yml"), pod.replacen("pod: bench", "pod: bench-pod-secret-1", 1)).unwrap();
    let leaks = |out: &str, held: usize| {
        let (compiled, failed, summary) = compile(out, held, &[("TOKEN_1", "bench-pod-secret-1")]);
        assert!(failed.is_none() && summary.is_none(), "{failed:?}");
        assert!(!root.join(out).exists(), "nothing written into {out}");
        compiled.diagnostics.0.iter().filter(|d| d.code.as_str() == "clawc::secrets::leak").map(|d| d.message.clone()).collect::<Vec<_>>()
    };
    let streamed = leaks("leak-streamed", 300);
    assert_eq!(streamed, vec!["the secret value of TOKEN_1 would be written to `report.json`".to_string()]);
    assert_eq!(leaks("leak-held", usize::MAX), streamed);
}
