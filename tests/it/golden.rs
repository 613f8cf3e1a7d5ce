//! Golden cases: `tests/cases/<name>/` holds a pod and its inputs, and `expected/` holds
//! what `clawc compile claw-pod.yml -o out --format json` must produce: the output tree
//! (`expected/out/`, byte for byte, absent when nothing may be written), the JSON-lines
//! stdout (`expected/stdout.jsonl`) and the exit code (`expected/exit-code`).
//!
//! Optional per case: `args` (extra arguments, one per line) and `process-env`
//! (`KEY=VALUE` lines given to the process). `UPDATE_GOLDEN=1 cargo test` rewrites the
//! expectations; review the diff.

use super::harness::{clawc, tree};
use std::path::Path;

fn copy_dir(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        if rel.starts_with("expected/") || rel == "args" || rel == "process-env" {
            continue;
        }
        let p = to.join(&rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).map(|s| s.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect()).unwrap_or_default()
}

fn run_case(case: &Path) -> Result<(), String> {
    let work = tempfile::tempdir().unwrap();
    copy_dir(case, work.path());
    let mut cmd = clawc();
    cmd.current_dir(work.path()).args(["compile", "claw-pod.yml", "-o", "out", "--format", "json"]).args(lines(&case.join("args")));
    for kv in lines(&case.join("process-env")) {
        let (k, v) = kv.split_once('=').unwrap();
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    let code = o.status.code().unwrap_or(-1).to_string();
    let stdout = String::from_utf8(o.stdout).unwrap();
    let got_tree = tree(&work.path().join("out"));
    let expected = case.join("expected");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&expected);
        std::fs::create_dir_all(&expected).unwrap();
        std::fs::write(expected.join("exit-code"), format!("{code}\n")).unwrap();
        std::fs::write(expected.join("stdout.jsonl"), &stdout).unwrap();
        for (rel, bytes) in &got_tree {
            let p = expected.join("out").join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        return Ok(());
    }
    let mut problems = Vec::new();
    let want_code =
        std::fs::read_to_string(expected.join("exit-code")).map_err(|_| "no expected/exit-code (run with UPDATE_GOLDEN=1)".to_string())?;
    if want_code.trim() != code {
        problems.push(format!("exit code {code}, expected {}\nstderr: {}", want_code.trim(), String::from_utf8_lossy(&o.stderr)));
    }
    let want_stdout = std::fs::read_to_string(expected.join("stdout.jsonl")).unwrap_or_default();
    if want_stdout != stdout {
        problems.push(format!("stdout differs:\n--- expected\n{want_stdout}\n--- got\n{stdout}"));
    }
    let want_tree = tree(&expected.join("out"));
    if code != "0" && !got_tree.is_empty() {
        problems.push("a failed compile wrote files".to_string());
    }
    for (rel, bytes) in &want_tree {
        match got_tree.get(rel) {
            None => problems.push(format!("missing output {rel}")),
            Some(b) if b != bytes => problems.push(format!(
                "{rel} differs:\n--- expected\n{}\n--- got\n{}",
                String::from_utf8_lossy(bytes),
                String::from_utf8_lossy(b)
            )),
            _ => {}
        }
    }
    for rel in got_tree.keys().filter(|k| !want_tree.contains_key(*k)) {
        problems.push(format!("unexpected output {rel}"));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}

#[test]
fn golden_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut cases: Vec<_> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("claw-pod.yml").exists()).collect();
    cases.sort();
    assert!(cases.len() >= 10, "expected the golden cases under {}", root.display());
    let failures: Vec<String> =
        cases.iter().filter_map(|c| run_case(c).err().map(|e| format!("=== {}\n{e}", c.file_name().unwrap().to_string_lossy()))).collect();
    assert!(failures.is_empty(), "{} of {} golden cases failed:\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}
