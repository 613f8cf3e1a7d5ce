//! The examples' images: OCI layouts committed beside each pod (`examples/*/images`),
//! built by `scripts/example-images` and named by each example's `clawc.toml`, so the
//! examples compile as written, without `--images` and without Docker.

use super::harness::{clawc, tree};
use serde_json::Value;
use std::path::{Path, PathBuf};

const EXAMPLES: [&str; 2] = ["minimal", "trading-desk"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `clawc ARGS` from the repository root with the example's own settings: no
/// `CLAWC_IMAGES`, and a private image cache so the test never reads the user's.
fn run(args: &[&str], cache: &Path) -> (i32, String, String) {
    let o = clawc().env_remove("CLAWC_IMAGES").env("CLAWC_CACHE_DIR", cache).current_dir(root()).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

/// Compiles `examples/<example>/claw-pod.yml` with no `--images`; returns the tree.
fn compile(example: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    let (out, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pod = format!("examples/{example}/claw-pod.yml");
    let (code, stdout, stderr) = run(&["compile", &pod, "-o", out.path().to_str().unwrap(), "--format", "json", "--strict"], cache.path());
    assert_eq!(code, 0, "{stdout}{stderr}");
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["warnings"], 0, "{stdout}");
    tree(out.path())
}

fn json(tree: &std::collections::BTreeMap<String, Vec<u8>>, rel: &str) -> Value {
    serde_json::from_slice(&tree[rel]).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn text<'a>(tree: &'a std::collections::BTreeMap<String, Vec<u8>>, rel: &str) -> &'a str {
    std::str::from_utf8(&tree[rel]).unwrap()
}

/// The descriptor entry `report.json` gives `service`.
fn descriptor(report: &Value, service: &str) -> Value {
    let services = report["services"].as_array().unwrap();
    services.iter().find(|s| s["name"] == service).unwrap_or_else(|| panic!("no service {service}"))["descriptor"].clone()
}

#[test]
fn the_script_rebuilds_the_committed_layouts_byte_for_byte() {
    let out = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(root().join("scripts/example-images")).arg("--out").arg(out.path()).output().unwrap();
    assert!(o.status.success(), "scripts/example-images failed: {}", String::from_utf8_lossy(&o.stderr));
    let built: Vec<PathBuf> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(built.len(), EXAMPLES.len(), "one layout per example: {built:?}");
    for example in EXAMPLES {
        let committed = tree(&root().join("examples").join(example).join("images"));
        let rebuilt = tree(&out.path().join(example).join("images"));
        assert!(committed.contains_key("oci-layout") && committed.contains_key("index.json"), "examples/{example}/images");
        assert_eq!(
            committed.keys().collect::<Vec<_>>(),
            rebuilt.keys().collect::<Vec<_>>(),
            "examples/{example}/images: run scripts/example-images and commit the result"
        );
        for (rel, bytes) in &rebuilt {
            assert!(committed[rel] == *bytes, "examples/{example}/images/{rel} differs: run scripts/example-images and commit the result");
        }
        // Test fixtures in the repository: kept to a few KiB.
        let size: usize = committed.values().map(Vec::len).sum();
        assert!(size < 16 * 1024, "examples/{example}/images holds {size} bytes");
    }
}

#[test]
fn the_script_refuses_to_replace_what_is_not_a_layout() {
    let out = tempfile::tempdir().unwrap();
    let precious = out.path().join("minimal/images/notes.txt");
    std::fs::create_dir_all(precious.parent().unwrap()).unwrap();
    std::fs::write(&precious, "keep me").unwrap();
    let o = std::process::Command::new(root().join("scripts/example-images")).arg("--out").arg(out.path()).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not an OCI layout; not replacing it"));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
}

#[test]
fn the_trading_desk_compiles_from_its_layout_with_no_flags() {
    let out = compile("trading-desk");
    // The reviewed output is what the README's first command writes.
    assert_eq!(out, tree(&root().join("examples/trading-desk/expected")), "examples/trading-desk/expected is stale");
    let report = json(&out, "report.json");
    let feed = descriptor(&report, "market-feed");
    assert_eq!(feed["origin"], "image");
    assert_eq!(feed["source"], "ghcr.io/example/market-feed:1:/market-feed.claw-describe.json");
    assert_eq!(descriptor(&report, "trading-api")["origin"], "build-context", "a build service with no image: its context");
    for (agent, runner) in [("analyst-0", "openclaw"), ("trader", "openclaw"), ("risk-officer", "nanoclaw"), ("reporter", "hermes")] {
        let md = text(&out, &format!("context/{agent}/CLAWDAPUS.md"));
        assert!(md.contains(&format!("- **Type:** {runner}\n")), "{agent}: the claw.type label of its image\n{md}");
    }
    let lock = json(&out, "clawc.lock");
    assert_eq!((&lock["images"], &lock["image_sources"]), (&"read".into(), &serde_json::json!(["oci:images"])));
    let inputs = lock["inputs"].as_array().unwrap();
    let hashed = |path: &str| inputs.iter().any(|i| i["path"] == path && i["role"] == "image" && i["sha256"].is_string());
    assert!(hashed("ghcr.io/example/market-feed:1:/market-feed.claw-describe.json"), "{lock}");
    assert!(hashed("ghcr.io/example/analyst:1.4") && hashed("ghcr.io/example/claw-mcp-stdio:1"), "{lock}");
}

#[test]
fn the_trading_desk_checks_against_its_reviewed_output_with_no_flags() {
    let cache = tempfile::tempdir().unwrap();
    let args = ["compile", "examples/trading-desk/claw-pod.yml", "--check", "-o", "examples/trading-desk/expected"];
    let (code, stdout, stderr) = run(&args, cache.path());
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("in sync"), "{stdout}");
}

#[test]
fn the_minimal_example_compiles_from_its_layout_with_no_flags() {
    let out = compile("minimal");
    let clock = descriptor(&json(&out, "report.json"), "clock");
    assert_eq!(clock["origin"], "image");
    assert_eq!(clock["source"], "ghcr.io/example/clock:1:/.claw-describe.json");
    assert!(text(&out, "context/assistant/CLAWDAPUS.md").contains("- **Type:** openclaw\n"));
    let tools = json(&out, "context/assistant/tools.json");
    assert_eq!(tools["tools"][0]["name"], "clock.now", "the tool of the descriptor read from the image");
}

/// `CLAWC_CACHE_DIR` empty or relative would put the cache under the directory clawc runs
/// in (a repository under review): it is ignored, and the user's cache is used.
#[test]
fn a_relative_or_empty_cache_dir_writes_nothing_where_clawc_runs() {
    for value in ["", "cache-here"] {
        let (work, out, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let pod = root().join("examples/minimal/claw-pod.yml");
        let o = clawc()
            .env_remove("CLAWC_IMAGES")
            .env("CLAWC_CACHE_DIR", value)
            .env("HOME", home.path())
            .current_dir(work.path())
            .args(["compile", pod.to_str().unwrap(), "-o", out.path().to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0, "CLAWC_CACHE_DIR={value:?} wrote into the working directory");
        assert!(home.path().join(".cache/clawc/images/v2").is_dir(), "CLAWC_CACHE_DIR={value:?}: the user's cache was not used");
    }
}
