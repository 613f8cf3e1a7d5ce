//! What one compile keeps for the next in a process (`clawc::Kept`, as `compile --watch`
//! keeps it: the descriptors decoded, the pod's YAML tree spliced one service entry at a
//! time, `report.json`'s index by the digest of its inputs) must never show: every golden
//! case is edited line by line (blanked, a comment added to it, a line put in after it,
//! which moves every later line), with a descriptor's description changed too, and each
//! edit is compiled in the library by one `Kept` carried through the whole sequence and
//! by a compile that keeps nothing. Exit code, diagnostics and every output's bytes must
//! be the same.

use super::harness::tree;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A copy of a golden case, and the options its `args` and `process-env` make.
struct Case {
    dir: tempfile::TempDir,
    opts: clawc::Options,
}

impl Case {
    fn new(case: &Path) -> Case {
        let dir = tempfile::tempdir().unwrap();
        for (rel, bytes) in tree(case) {
            if rel.starts_with("expected/") {
                continue;
            }
            let p = dir.path().join(&rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        let mut opts = clawc::Options { pod: dir.path().join("claw-pod.yml"), ..Default::default() };
        let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
        let args = read("args");
        let mut args = args.split_whitespace();
        while let (Some(flag), Some(value)) = (args.next(), args.next()) {
            if (flag, value) == ("--secrets", "inline") {
                opts.secrets = clawc::SecretMode::Inline;
                continue;
            }
            let (service, value) = value.split_once('=').unwrap();
            match flag {
                "--runner" => opts.runners.insert(service.into(), value.into()),
                "--descriptor" => opts.descriptors.insert(service.into(), dir.path().join(value)).map(|_| String::new()),
                other => panic!("a golden case's args: {other} is not handled here"),
            };
        }
        opts.process_env = read("process-env").lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.into(), v.into())).collect();
        Case { dir, opts }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

/// What a compile gave: its exit code, its diagnostics and its outputs.
#[derive(Debug, PartialEq)]
struct Outcome {
    code: i32,
    diagnostics: Vec<String>,
    outputs: BTreeMap<String, Vec<u8>>,
}

fn compiled(opts: &clawc::Options) -> Outcome {
    let c = clawc::compile(opts);
    let diagnostics = c.diagnostics.0.iter().map(|d| serde_json::to_string(&d.to_json(&c.sources)).unwrap()).collect();
    let code = c.exit_code();
    let outputs = c.artifacts.map(|a| a.0.into_iter().map(|(p, a)| (p, a.bytes.to_vec())).collect()).unwrap_or_default();
    Outcome { code, diagnostics, outputs }
}

/// Compiles the case as it is now with `kept` and with nothing kept, and asserts both
/// gave the same; returns whether it compiled.
fn same(case: &Case, kept: &clawc::Kept, what: &str) -> bool {
    let with = compiled(&clawc::Options { kept: kept.clone(), ..case.opts.clone() });
    let without = compiled(&case.opts);
    assert!(with == without, "{what}: a compile with what the last one kept gave another result than one without");
    with.code == 0
}

/// A line of the pod as an edit makes it.
type Edit = dyn Fn(&str) -> String;

/// The edits of one golden case: (1 if it compiled, edits that compiled).
fn edits_of(dir: &Path, name: &str) -> (u64, u64) {
    let case = Case::new(dir);
    let kept = clawc::Kept::all();
    if !same(&case, &kept, name) {
        return (0, 0);
    }
    let original = std::fs::read_to_string(case.path("claw-pod.yml")).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    let mut ok = 0;
    let edited = |i: usize, line: &Edit| {
        let pod: Vec<String> = lines.iter().enumerate().map(|(n, l)| if n == i { line(l) } else { (*l).to_string() }).collect();
        pod.join("\n") + "\n"
    };
    for i in 0..lines.len() {
        let edits: [(&str, &Edit); 3] = [
            ("blanked", &|_| String::new()),
            ("with a comment", &|l| format!("{l}  # noted")),
            ("with a line after it", &|l| format!("{l}\n      # a line more")),
        ];
        for (how, edit) in edits {
            std::fs::write(case.path("claw-pod.yml"), edited(i, edit)).unwrap();
            ok += u64::from(same(&case, &kept, &format!("{name}: line {} {how}", i + 1)));
        }
    }
    std::fs::write(case.path("claw-pod.yml"), &original).unwrap();
    ok += u64::from(same(&case, &kept, &format!("{name}: put back")));
    for (rel, bytes) in tree(case.dir.path()) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if text.contains("\"description\": \"") {
            std::fs::write(case.path(&rel), text.replacen("\"description\": \"", "\"description\": \"Changed: ", 1)).unwrap();
            ok += u64::from(same(&case, &kept, &format!("{name}: a description in {rel} changed")));
            std::fs::write(case.path(&rel), &bytes).unwrap();
            ok += u64::from(same(&case, &kept, &format!("{name}: {rel} put back")));
        }
    }
    (1, ok)
}

#[test]
fn a_compile_with_what_the_last_one_kept_gives_what_one_without_gives() {
    let results: Vec<(u64, u64)> = super::harness::on_every_golden_case(edits_of);
    let cases: u64 = results.iter().map(|r| r.0).sum();
    let edits: u64 = results.iter().map(|r| r.1).sum();
    assert!(cases >= 10, "only {cases} golden cases compiled");
    assert!(edits > 500, "only {edits} edits compiled: the test proves little");
}
