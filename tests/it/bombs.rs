//! Inputs built to exhaust memory, time or the stack, or to write outside the output
//! directory: each must end in its diagnostic (exit 2), promptly, writing nothing.

use super::harness::{Pod, clawc};
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

/// Generous for a debug build on a loaded 2-core machine; the fixed code takes well under
/// a second for each of these, the code before it minutes (or aborts).
const WALL_CLOCK: Duration = Duration::from_secs(20);

/// Compiles `pod`, asserting exit 2, no panic, nothing written, a diagnostic `code` whose
/// message contains `msg`, and the wall-clock bound. Returns that diagnostic.
#[track_caller]
fn refused(pod: &Pod, code: &str, msg: &str) -> serde_json::Value {
    let start = Instant::now();
    let run = pod.compile(&[]);
    let took = start.elapsed();
    assert_eq!(run.code, 2, "stdout: {}\nstderr: {}", tail(&run.stdout), tail(&run.stderr));
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!pod.out_exists(), "a failed compile wrote output");
    assert!(took < WALL_CLOCK, "took {took:?}");
    run.assert_error(code, msg)
}

fn tail(s: &str) -> &str {
    &s[s.len().saturating_sub(2000)..]
}

#[test]
fn huge_count_is_refused() {
    let pod = Pod::new("services:\n  bot:\n    image: bot\n    x-claw:\n      cllama: passthrough\n      count: 100000000\n");
    let d = refused(&pod, "clawc::pod::too_many_agents", "count 100000000 is over the limit of 1000");
    assert_eq!((d["line"].as_u64(), d["column"].as_u64()), (Some(6), Some(14)));
    // Digits beyond i64 are a count too, not a wrong type.
    let pod = Pod::new("services:\n  bot:\n    x-claw:\n      count: 99999999999999999999999\n");
    refused(&pod, "clawc::pod::too_many_agents", "over the limit");
}

#[test]
fn too_many_agents_in_one_pod() {
    let mut y = String::from("services:\n");
    for i in 0..11 {
        writeln!(y, "  bot{i}:\n    x-claw:\n      count: 1000").unwrap();
    }
    refused(&Pod::new(&y), "clawc::pod::too_many_agents", "more than 10000 agent ids");
}

#[test]
fn defaults_copied_into_many_services_are_bounded() {
    // 2,000 defaults × 1,000 services would be two million grants (more with YAML aliases).
    let mut y = String::from("x-claw:\n  tools-defaults:\n");
    for i in 0..2000 {
        writeln!(y, "    - svc{i}").unwrap();
    }
    y.push_str("services:\n");
    for i in 0..1000 {
        writeln!(y, "  a{i}: {{x-claw: {{cllama: passthrough}}}}").unwrap();
    }
    refused(&Pod::new(&y), "clawc::pod::too_many_entries", "more than 1000000 entries");
}

#[test]
fn aliased_large_scalar_is_bounded_in_bytes() {
    // 1 MiB, referenced 4,000 times: 4 GiB of text from a 1 MiB file.
    let mut y = format!("x-big: &big {}\nx-refs:\n", "a".repeat(1 << 20));
    for _ in 0..4000 {
        y.push_str("  - *big\n");
    }
    y.push_str("services: {}\n");
    refused(&Pod::new(&y), "clawc::parse::alias_budget", "MiB of text");
}

#[test]
fn service_names_cannot_leave_the_output_directory() {
    let root = tempfile::tempdir().unwrap();
    let pod_dir = root.path().join("p/q");
    std::fs::create_dir_all(&pod_dir).unwrap();
    let yaml = "services:\n  \"../../../escaped\":\n    image: bot\n    x-claw:\n      cllama: passthrough\n  ok:\n    image: x\n";
    std::fs::write(pod_dir.join("claw-pod.yml"), yaml).unwrap();
    let o = clawc().current_dir(&pod_dir).args(["compile", "-o", "out", "--format", "json"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{stdout}");
    let d: serde_json::Value =
        stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).find(|d: &serde_json::Value| d["code"].is_string()).unwrap();
    assert_eq!(d["code"], "clawc::pod::invalid_service_name", "{stdout}");
    assert_eq!((d["line"].as_u64(), d["column"].as_u64()), (Some(2), Some(3)), "points at the service key");
    assert!(d["help"].as_str().unwrap().contains("letter or digit"));
    assert_eq!(everything_under(root.path()), ["p", "p/q", "p/q/claw-pod.yml"], "nothing created, inside or out");
}

#[test]
fn other_invalid_service_names() {
    for name in ["a/b", ".hidden", "-x", "sp ace", "é"] {
        let pod = Pod::new(&format!("services:\n  {name:?}:\n    image: x\n"));
        refused(&pod, "clawc::pod::invalid_service_name", "not a valid Compose service name");
    }
}

/// Every file and directory under `root`, relative, sorted.
fn everything_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}
