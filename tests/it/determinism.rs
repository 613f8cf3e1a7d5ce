//! Same inputs, same bytes: whatever the order of services in the YAML, of keys in the
//! descriptors, the working directory, or how the pod path is spelled.

use super::harness::{clawc, tree};
use serde_json::Value;
use std::path::Path;

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk")
}

fn copy(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        if rel.starts_with(".claw-compiled/") || rel.starts_with("expected/") || rel == ".env" {
            continue;
        }
        let p = to.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

/// The `services:` entries in reverse order (top-level entries start at two spaces).
fn reverse_services(yaml: &str) -> String {
    let (head, services) = yaml.split_once("\nservices:\n").unwrap();
    let mut blocks: Vec<String> = Vec::new();
    for line in services.lines() {
        if line.starts_with("  ") && !line.starts_with("   ") && !line.trim().is_empty() {
            blocks.push(String::new());
        }
        let b = blocks.last_mut().unwrap();
        b.push_str(line);
        b.push('\n');
    }
    blocks.reverse();
    format!("{head}\nservices:\n{}", blocks.concat())
}

/// JSON with every object's keys written in reverse order and different whitespace.
fn reverse_keys(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let items: Vec<String> =
                m.iter().rev().map(|(k, v)| format!("{}:  {}", serde_json::to_string(k).unwrap(), reverse_keys(v))).collect();
            format!("{{ {} }}", items.join(",\n"))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(reverse_keys).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

/// The report with `line`, `column` and `spread_line` removed everywhere.
fn without_positions(bytes: &[u8]) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in ["line", "column", "spread_line"] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: Value = serde_json::from_slice(bytes).unwrap();
    strip(&mut v);
    v
}

fn compile(dir: &Path, cwd: &Path, pod_arg: &str, out: &Path) {
    let o = clawc().current_dir(cwd).args(["compile", pod_arg, "-o"]).arg(out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.exists());
}

#[test]
fn shuffled_inputs_give_identical_trees() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    copy(&example(), a.path());
    copy(&example(), b.path());
    let pod = b.path().join("claw-pod.yml");
    std::fs::write(&pod, reverse_services(&std::fs::read_to_string(&pod).unwrap())).unwrap();
    for (rel, bytes) in tree(b.path()) {
        if rel.ends_with(".json") {
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            std::fs::write(b.path().join(&rel), reverse_keys(&v)).unwrap();
        }
    }
    assert_ne!(std::fs::read(a.path().join("claw-pod.yml")).unwrap(), std::fs::read(&pod).unwrap());
    let out_a = tempfile::tempdir().unwrap();
    let out_b = tempfile::tempdir().unwrap();
    compile(a.path(), a.path(), "claw-pod.yml", out_a.path());
    // Other working directory, absolute pod path.
    compile(b.path(), out_b.path(), pod.to_str().unwrap(), out_b.path());
    let ta = tree(out_a.path());
    let tb = tree(out_b.path());
    assert!(ta.len() > 20);
    assert_eq!(ta.keys().collect::<Vec<_>>(), tb.keys().collect::<Vec<_>>());
    let is_report = |rel: &str| rel == "report.json" || rel.starts_with("report/");
    let mut moved = 0;
    for (k, v) in &ta {
        if k == "clawc.lock" {
            // The lock hashes the (reshuffled) input bytes; what it says of outputs and env must agree.
            let (la, lb): (Value, Value) = (serde_json::from_slice(v).unwrap(), serde_json::from_slice(&tb[k]).unwrap());
            let outputs = |l: &Value| {
                l["outputs"].as_array().unwrap().iter().filter(|o| !is_report(o["path"].as_str().unwrap())).cloned().collect::<Vec<_>>()
            };
            assert_eq!(outputs(&la), outputs(&lb));
            assert_eq!(la["env"], lb["env"]);
            continue;
        }
        if is_report(k) {
            // Grant provenance carries source lines, which reordering the YAML moves.
            assert_eq!(without_positions(v), without_positions(&tb[k]), "{k} differs beyond source positions");
            moved += usize::from(v != &tb[k]);
            continue;
        }
        assert!(tb[k] == *v, "{k} differs between shuffled compiles");
        let text = String::from_utf8_lossy(v);
        assert!(!text.contains(a.path().to_str().unwrap()) && !text.contains("/tmp/"), "{k} holds a host path");
    }
    assert!(moved > 0, "the shuffle should have moved grant lines in the services' reports");
}

#[test]
fn the_bundled_example_output_is_committed_and_current() {
    // examples/trading-desk/expected/ is the reviewed output; it must match a fresh compile
    // with the example's own settings (its clawc.toml reads the images from ./images).
    let out = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    copy(&example(), dir.path());
    let o = clawc()
        .env_remove("CLAWC_IMAGES")
        .env("CLAWC_CACHE_DIR", cache.path())
        .current_dir(dir.path())
        .args(["compile", "claw-pod.yml", "-o"])
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let expected = example().join("expected");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&expected);
        for (rel, bytes) in tree(out.path()) {
            let p = expected.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
    }
    assert_eq!(tree(out.path()), tree(&expected), "run UPDATE_GOLDEN=1 cargo test and review the diff");
}

/// Replicas share one rendering of CLAWDAPUS.md with a stand-in for the agent id
/// (U+E000 … U+E001). A pod whose own text holds that stand-in must still get each
/// replica's own id, never another's and never the stand-in.
#[test]
fn replicas_get_their_own_id_even_when_the_pod_holds_the_stand_in() {
    let dir = tempfile::tempdir().unwrap();
    let stand_in = "\u{E000}clawc-agent-id\u{E001}";
    let pod = format!(
        "x-claw:\n  pod: \"p{stand_in}\"\nservices:\n  bot:\n    image: x\n    x-claw:\n      count: 3\n      cllama: passthrough\n      feeds:\n        - {{name: \"f-{{claw_id}}\", source: api, path: \"/a/{{claw_id}}\", ttl: 5}}\n  api:\n    image: y\n"
    );
    std::fs::write(dir.path().join("claw-pod.yml"), pod).unwrap();
    let ok = crate::harness::clawc()
        .current_dir(dir.path())
        .args(["compile", "claw-pod.yml", "-o", "out", "--images", "none"])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    for i in 0..3 {
        let md = std::fs::read_to_string(dir.path().join(format!("out/context/bot-{i}/CLAWDAPUS.md"))).unwrap();
        assert!(md.contains(&format!("- **Service:** bot-{i}\n")), "{md}");
        assert!(md.contains(&format!("- `f-bot-{i}` from `api`")), "{md}");
        assert!(md.contains(&format!("- **Pod:** p{stand_in}\n")), "the pod's own text is kept as written: {md}");
        assert_eq!(md.matches(stand_in).count(), 1, "{md}");
    }
}

#[path = "../../benches/common/generate.rs"]
#[allow(dead_code)] // the generator only, not the benches' edit
pub(crate) mod generate;

/// Every file under `root` with its permission bits.
fn tree_with_modes(root: &Path) -> std::collections::BTreeMap<String, (u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    tree(root)
        .into_iter()
        .map(|(rel, bytes)| {
            let mode = std::fs::metadata(root.join(&rel)).unwrap().permissions().mode() & 0o777;
            (rel, (mode, bytes))
        })
        .collect()
}

/// The per-agent work runs on `--jobs N` threads; the tree (every file, `clawc.lock`,
/// `report.json`) and every file's mode are the same bytes whatever N is, in both secrets
/// modes, and `--check` with another N finds the tree in sync.
#[test]
fn the_tree_is_the_same_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    // 60 services × 10 replicas, 100 tool services: two batches of agent services (a
    // compile writes the tree as it goes, 512 agent ids at a time).
    generate::generate(dir.path(), 60);
    // One service carries a skill folder with a script (mode 0755 in the tree); a folder
    // also makes `--check` compile rather than answer from the lock.
    let pod = std::fs::read_to_string(dir.path().join("claw-pod.yml")).unwrap();
    let pod = pod.replacen("      count: 10\n", "      count: 10\n      skills: [skills/tidy]\n", 1);
    std::fs::write(dir.path().join("claw-pod.yml"), pod).unwrap();
    std::fs::create_dir_all(dir.path().join("skills/tidy/scripts")).unwrap();
    std::fs::write(dir.path().join("skills/tidy/SKILL.md"), "---\nname: tidy\ndescription: d\n---\n# Tidy\n").unwrap();
    let script = dir.path().join("skills/tidy/scripts/run.sh");
    std::fs::write(&script, "#!/bin/sh\necho ok\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // Token values, so `--secrets inline` writes files with mode 0600.
    let tokens: Vec<(String, String)> =
        (1..generate::TOOL_SERVICES).map(|s| (format!("TOKEN_{s}"), format!("tok-{s}-0123456789abcdef"))).collect();
    let compile = |jobs: &str, secrets: &str| {
        let out = dir.path().join(format!("out-{secrets}-{jobs}"));
        let o = clawc()
            .current_dir(dir.path())
            .envs(tokens.iter().map(|(k, v)| (k, v)))
            .args(["compile", "claw-pod.yml", "--secrets", secrets, "--jobs", jobs, "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "--jobs {jobs}: {}", String::from_utf8_lossy(&o.stderr));
        tree_with_modes(&out)
    };
    let one = compile("1", "redact");
    assert_eq!(
        one.len(),
        600 * 3 + 60 + 10 * 2 + 2,
        "CLAWDAPUS.md, tools.json, feeds.json per agent; a report per agent service (60); the skill's 2 files in 10; the report index and lock"
    );
    // What the command wrote as it compiled is what the library compiles in memory, and
    // what that tree writes as a whole.
    let opts = clawc::Options { pod: dir.path().join("claw-pod.yml"), jobs: 2, process_env: tokens.clone(), ..Default::default() };
    let compiled = clawc::compile(&opts);
    let artifacts = compiled.artifacts.as_ref().expect("the pod compiles in memory");
    let memory: std::collections::BTreeMap<String, Vec<u8>> = artifacts.0.iter().map(|(p, a)| (p.clone(), a.bytes.to_vec())).collect();
    let streamed: std::collections::BTreeMap<String, Vec<u8>> = one.iter().map(|(p, (_, b))| (p.clone(), b.clone())).collect();
    assert!(
        memory == streamed,
        "the streamed tree differs from the one in memory: {:?}",
        memory.keys().filter(|k| memory.get(*k) != streamed.get(*k)).take(5).collect::<Vec<_>>()
    );
    let whole = dir.path().join("out-whole");
    clawc::output::write::write_tree(&whole, artifacts, &compiled.secrets).unwrap();
    assert!(tree_with_modes(&whole) == one, "a tree written whole: {:?}", differing(&one, &tree_with_modes(&whole)));
    assert_eq!(one["context/agent-0-3/skills/tidy/scripts/run.sh"].0, 0o755);
    assert!(one.contains_key("report.json") && one.contains_key("clawc.lock"));
    for jobs in ["2", "4"] {
        let many = compile(jobs, "redact");
        assert!(one == many, "--jobs {jobs} wrote other bytes or modes than --jobs 1: {:?}", differing(&one, &many));
    }
    let inline = compile("1", "inline");
    assert!(inline.values().any(|(mode, _)| *mode == 0o600), "inline tokens are written 0600");
    let many = compile("4", "inline");
    assert!(inline == many, "inline, --jobs 4: {:?}", differing(&inline, &many));
    // A tree compiled on four threads is in sync for a check on one (it compiles: the
    // skill folder cannot be vouched for from hashes).
    let o = clawc()
        .current_dir(dir.path())
        .args(["compile", "claw-pod.yml", "--check", "--format", "json", "--jobs", "1", "-o", "out-redact-4"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    assert_eq!(
        (o.status.code(), doc["status"].as_str(), doc["answered_by"].as_str()),
        (Some(0), Some("in-sync"), Some("compile")),
        "{doc}"
    );
    // Zero threads is not a count.
    let o = clawc().current_dir(dir.path()).args(["compile", "claw-pod.yml", "--jobs", "0", "-o", "out-0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(!dir.path().join("out-0").exists());
}

/// The paths whose bytes or modes differ (first few), for the assertion message.
fn differing<'a>(
    a: &'a std::collections::BTreeMap<String, (u32, Vec<u8>)>,
    b: &'a std::collections::BTreeMap<String, (u32, Vec<u8>)>,
) -> Vec<&'a str> {
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).take(5).map(String::as_str).collect()
}

/// A big pod's services are read, and their grants resolved, on every core (runs of 64
/// services, each with a context of its own): plans, the lock's record of the variables
/// looked up, and every diagnostic are the same for any thread count, for a pod that
/// compiles and for ones with mistakes (read or resolved again on one thread, so each is
/// reported as it would be there).
#[test]
fn services_read_and_grants_resolved_on_many_threads_are_what_one_thread_gives() {
    let dir = tempfile::tempdir().unwrap();
    generate::generate_with(dir.path(), 200, 1);
    let tokens: Vec<(String, String)> = (1..generate::TOOL_SERVICES).map(|s| (format!("TOKEN_{s}"), format!("tok-{s}-abcdef"))).collect();
    let pod = dir.path().join("claw-pod.yml");
    let run = |jobs: usize| {
        let c = clawc::compile(&clawc::Options { pod: pod.clone(), jobs, process_env: tokens.clone(), ..Default::default() });
        let diagnostics: Vec<String> = c.diagnostics.0.iter().map(|d| serde_json::to_string(&d.to_json(&c.sources)).unwrap()).collect();
        let code = c.exit_code();
        let tree: std::collections::BTreeMap<String, Vec<u8>> =
            c.artifacts.map(|a| a.0.into_iter().map(|(p, a)| (p, a.bytes.to_vec())).collect()).unwrap_or_default();
        (code, diagnostics, tree)
    };
    let one = run(1);
    assert_eq!((one.0, one.2.len()), (0, 200 * 4 + 2), "{:?}", one.1);
    assert!(run(2) == one && run(4) == one, "the tree differs with more threads");
    // Mistakes in two runs: a tool the descriptor does not declare, a token unset.
    let text = std::fs::read_to_string(&pod).unwrap();
    let at = text.find("  agent-150:\n").unwrap();
    let broken = format!("{}{}", &text[..at], text[at..].replacen("allow: [op_0", "allow: [op_x, op_0", 1));
    std::fs::write(&pod, broken.replacen("      TOKEN_3: ${TOKEN_3}\n", "      TOKEN_3: ${UNSET_TOKEN}\n", 1)).unwrap();
    let one = run(1);
    assert_eq!(one.0, 2, "{:?}", one.1);
    assert!(one.1.iter().any(|d| d.contains("op_x")), "{:?}", one.1);
    assert_eq!(run(2), one, "the diagnostics differ with more threads");
    // Mistakes in how two services are written (the services are read on every core too).
    let misread = text
        .replacen("      count: 1\n", "      count: many\n", 1)
        .replace("  agent-170:\n    image: agent\n", "  agent-170:\n    image: [agent]\n");
    std::fs::write(&pod, misread).unwrap();
    let one = run(1);
    assert_eq!(one.0, 2, "{:?}", one.1);
    assert!(one.1.len() >= 2, "{:?}", one.1);
    assert_eq!(run(2), one, "the diagnostics differ with more threads");
}
