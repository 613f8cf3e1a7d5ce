//! No input makes clawc panic: thousands of deterministic random edits of the example's
//! pod and descriptors, each compiled in-process. Every run must end in artifacts or in
//! diagnostics with a code, never in a panic.

use super::harness::tree;
use std::path::Path;

/// A small deterministic PRNG (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const NOISE: &[&str] = &[
    "{", "}", "[", "]", ":", "-", "...", "&a", "*a", "<<", "${", "}", "\"", "'", "\n", "  ", "#", "null", "0", "-1", "é", "\t", ",",
    "!!str ", "|",
];

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut s: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(s.len() + 1);
        match rng.below(3) {
            0 if at < s.len() => {
                let len = 1 + rng.below(8);
                s.drain(at..(at + len).min(s.len()));
            }
            1 => {
                let noise: Vec<char> = NOISE[rng.below(NOISE.len())].chars().collect();
                s.splice(at..at, noise);
            }
            _ => {
                // Duplicate a slice elsewhere: keeps the text plausible.
                let from = rng.below(s.len());
                let len = rng.below(40).min(s.len() - from);
                let piece: Vec<char> = s[from..from + len].to_vec();
                s.splice(at..at, piece);
            }
        }
    }
    s.into_iter().collect()
}

#[test]
fn mutated_inputs_never_panic() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
    let files: Vec<(String, String)> = tree(&example)
        .into_iter()
        .filter(|(rel, _)| !rel.starts_with("expected/") && !rel.starts_with(".claw-compiled/"))
        .map(|(rel, b)| (rel, String::from_utf8(b).unwrap()))
        .collect();
    let targets: Vec<usize> = files
        .iter()
        .enumerate()
        .filter(|(_, (r, _))| r.ends_with(".yml") || r.ends_with(".json") || r.ends_with("Dockerfile"))
        .map(|(i, _)| i)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    // CLAWC_MUTATION_ROUNDS / CLAWC_MUTATION_SEED allow a longer local search.
    let rounds: usize = std::env::var("CLAWC_MUTATION_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let seed: u64 = std::env::var("CLAWC_MUTATION_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut rng = Rng(seed);
    let (mut ok, mut failed) = (0, 0);
    for round in 0..rounds {
        let victim = targets[rng.below(targets.len())];
        let root = dir.path().join(format!("r{round}"));
        for (i, (rel, text)) in files.iter().enumerate() {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let text = if i == victim { mutate(text, &mut rng) } else { text.clone() };
            std::fs::write(p, text).unwrap();
        }
        let opts = clawc::Options { pod: root.join("claw-pod.yml"), ..Default::default() };
        let compiled = std::panic::catch_unwind(|| clawc::compile(&opts))
            .unwrap_or_else(|_| panic!("panic in round {round} mutating {}", files[victim].0));
        if compiled.artifacts.is_some() {
            ok += 1;
        } else {
            failed += 1;
            assert!(compiled.diagnostics.errors().all(|d| d.code.as_str().starts_with("clawc::")));
            assert!(compiled.diagnostics.has_errors());
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
    // Both outcomes must occur, or the mutations are not exercising anything.
    assert!(ok > 20 && failed > 20, "ok={ok} failed={failed}");
}

/// Every entry under `root` without following symlinks: (kind, bytes or link target).
fn snapshot(root: &Path) -> std::collections::BTreeMap<String, (char, Vec<u8>)> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let t = std::fs::symlink_metadata(&p).unwrap().file_type();
            let entry = if t.is_symlink() {
                ('l', std::fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes())
            } else if t.is_dir() {
                stack.push(p);
                ('d', Vec::new())
            } else if t.is_file() {
                ('f', std::fs::read(&p).unwrap())
            } else {
                ('o', Vec::new())
            };
            out.insert(rel, entry);
        }
    }
    out
}

/// One hostile change to a compiled tree at `rel` (a file or a directory on its way).
fn vandalize(out: &Path, rel: &str, outside: &Path, rng: &mut Rng) {
    let p = out.join(rel);
    // An earlier change may have made a parent a symlink out of the tree: the vandal works
    // inside `out` only (what clawc does through such a link is what is under test).
    if p.ancestors().take_while(|a| *a != out).skip(1).any(|a| a.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink())) {
        return;
    }
    let _ = std::fs::remove_file(&p).or_else(|_| std::fs::remove_dir_all(&p));
    match rng.below(7) {
        // (An earlier change may have replaced a parent: then this one fails, which is fine.)
        0 => drop(std::os::unix::fs::symlink(outside.join("secret.txt"), &p)),
        1 => drop(std::os::unix::fs::symlink(outside, &p)),
        2 => drop(std::os::unix::fs::symlink("/dev/zero", &p)),
        3 => {
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
        }
        4 => {
            let _ = std::fs::create_dir_all(p.join("inner")).and_then(|_| std::fs::write(p.join("inner/x"), "x"));
        }
        5 => drop(std::fs::write(&p, "garbage\x1b[31m\n")),
        _ => {} // deleted
    }
}

/// Adds forged entries to the lock in `out` (when it is still a regular file).
fn forge_lock(out: &Path, rng: &mut Rng) {
    let path = out.join("clawc.lock");
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
        return;
    }
    let Ok(text) = std::fs::read(&path) else { return };
    let Ok(mut lock) = serde_json::from_slice::<serde_json::Value>(&text) else { return };
    let forged = ["../outside/secret.txt", "/etc/passwd", "a/../../outside/secret.txt", "context/..", "", ".clawc-stage/0", "ssh/key"];
    let pick = forged[rng.below(forged.len())];
    if let Some(outputs) = lock["outputs"].as_array_mut() {
        outputs.push(serde_json::json!({ "path": pick, "sha256": "0".repeat(64) }));
    }
    std::fs::write(path, serde_json::to_vec(&lock).unwrap()).unwrap();
}

#[test]
fn hostile_trees_on_disk_never_break_a_promise() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
    let opts = clawc::Options { pod: example.join("claw-pod.yml"), ..Default::default() };
    let compiled = clawc::compile(&opts);
    let artifacts = compiled.artifacts.as_ref().expect("the example compiles");
    let dir = tempfile::tempdir().unwrap();
    let (reference, outside) = (dir.path().join("reference"), dir.path().join("outside"));
    let records = dir.path().join("cache/check/v1");
    clawc::output::write::write_tree(&reference, artifacts, &compiled.secrets).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "OUTSIDE-SECRET").unwrap();
    let outside_before = snapshot(&outside);
    let paths: Vec<String> = artifacts
        .0
        .keys()
        .flat_map(|p| {
            let parts: Vec<&str> = p.split('/').collect();
            (1..=parts.len()).map(move |n| parts[..n].join("/"))
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let rounds: usize = std::env::var("CLAWC_MUTATION_ROUNDS").ok().and_then(|v| v.parse().ok()).map_or(150, |r: usize| r / 2);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut written, mut refused) = (0, 0);
    for round in 0..rounds {
        let out = dir.path().join(format!("out{round}"));
        // Every other round, the tree is one clawc wrote and recorded (stat record), so the
        // vandalised files are ones the record vouched for before they were changed.
        let recorded = round % 2 == 1;
        let write_opts = clawc::output::write::WriteOptions { records: recorded.then_some(records.as_path()), ..Default::default() };
        if recorded {
            for _ in 0..2 {
                clawc::output::write::write_tree_with(&out, artifacts, &compiled.secrets, write_opts).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        } else {
            let copy = std::process::Command::new("cp").arg("-a").arg(&reference).arg(&out).status().unwrap();
            assert!(copy.success());
        }
        for _ in 0..1 + rng.below(3) {
            vandalize(&out, &paths[rng.below(paths.len())], &outside, &mut rng);
        }
        forge_lock(&out, &mut rng);
        let before = snapshot(&out);
        let drift = clawc::output::check::drift(&out, artifacts, &compiled.secrets).unwrap();
        for f in &drift {
            assert!(!String::from_utf8_lossy(&f.old).contains("OUTSIDE-SECRET"), "round {round}: check read outside");
            assert!(f.old.len() < 1 << 20, "round {round}: read an unbounded file");
        }
        match clawc::output::write::write_tree_with(&out, artifacts, &compiled.secrets, write_opts) {
            Ok(_) => {
                written += 1;
                let now = snapshot(&out);
                for (rel, a) in &artifacts.0 {
                    assert_eq!(now.get(rel), Some(&('f', a.bytes.to_vec())), "round {round}: {rel} not written");
                }
            }
            Err(d) => {
                refused += 1;
                assert!(d.code.as_str().starts_with("clawc::output::"), "round {round}: {d:?}");
                assert_eq!(snapshot(&out), before, "round {round}: a refused write changed the tree ({})", d.message);
            }
        }
        assert!(!out.join(".clawc-stage").exists(), "round {round}: staging left");
        assert_eq!(snapshot(&outside), outside_before, "round {round}: touched a file outside --out");
        std::fs::remove_dir_all(&out).unwrap();
    }
    assert!(written > 10 && refused > 10, "written={written} refused={refused}");
}

#[test]
fn hostile_names_never_reach_outside_out() {
    let names = ["../../../escaped", "a/b", ".", "..", "x\\u0000y", "-x", "a..b", "ünï", " sp ", "a\\\\b", "/abs", "ok.1", "skills"];
    let desc = r#"{"version":2,"description":"svc","skill":"SKILL","tools":[{"name":"t","description":"t","inputSchema":{"type":"object"},"http":{"method":"POST","path":"/t"}}]}"#;
    let skills = ["skill.md", "../x.md", "a/.", "/s/x/..", "..", "."];
    for (i, name) in names.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let pod_dir = dir.path().join("a/b/c/pod");
        std::fs::create_dir_all(pod_dir.join("api/s")).unwrap();
        std::fs::write(pod_dir.join("api/skill.md"), "# s").unwrap();
        std::fs::write(pod_dir.join("api/.claw-describe.json"), desc.replace("SKILL", skills[i % skills.len()])).unwrap();
        let yaml = format!(
            "services:\n  \"{name}\":\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n    x-claw:\n      surfaces: []\n"
        );
        std::fs::write(pod_dir.join("claw-pod.yml"), yaml).unwrap();
        let before = snapshot(dir.path());
        let compiled = clawc::compile(&clawc::Options { pod: pod_dir.join("claw-pod.yml"), ..Default::default() });
        match &compiled.artifacts {
            Some(artifacts) => {
                let out = pod_dir.join("out");
                let _ = clawc::output::write::write_tree(&out, artifacts, &compiled.secrets);
                let after = snapshot(dir.path());
                let added: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
                assert!(added.iter().all(|k| k.starts_with("a/b/c/pod/out")), "{name:?} wrote outside --out: {added:?}");
            }
            None => assert!(compiled.diagnostics.errors().all(|d| d.code.as_str().starts_with("clawc::")), "{name:?}"),
        }
    }
}
