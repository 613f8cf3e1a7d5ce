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
    for i in 0..51 {
        writeln!(y, "  bot{i}:\n    x-claw:\n      count: 1000").unwrap();
    }
    refused(&Pod::new(&y), "clawc::pod::too_many_agents", "more than 50000 agent ids");
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

#[test]
fn a_descriptor_of_20000_invalid_tools_is_reported_promptly() {
    let tools: Vec<String> = (0..20_000).map(|i| format!(r#"{{"name":"t{i}"}}"#)).collect();
    let desc = format!(r#"{{"version":2,"tools":[{}]}}"#, tools.join(","));
    let pod = Pod::new(AGENT).file("api/.claw-describe.json", &desc);
    let d = refused(&pod, "clawc::describe::tool", "tools[0]: description is required");
    assert_eq!(d["file"], "api/.claw-describe.json");
    // Capped per code and file, with a summary that keeps the count.
    let run = pod.compile(&[]);
    let shown = run.codes().iter().filter(|c| *c == "clawc::describe::tool").count();
    assert!(shown <= 101, "{shown} shown");
    run.assert_error("clawc::describe::tool", "more `clawc::describe::tool` diagnostics in this file are not shown");
}

#[test]
fn thousands_of_unknown_tool_names_are_reported_promptly() {
    // A descriptor of 20,000 tools, and grants naming 30,000 tools it does not declare,
    // then 30,000 `svc.toolN` entries naming no service at all.
    let names: Vec<String> = (0..20_000).map(|i| format!("op{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let unknown: Vec<String> = (0..30_000).map(|i| format!("tool{i}")).collect();
    let mut y = String::from("services:\n  bot:\n    image: bot\n    x-claw:\n      cllama: passthrough\n      tools:\n");
    writeln!(y, "        - service: api\n          allow: [{}]", unknown.join(", ")).unwrap();
    for u in &unknown {
        writeln!(y, "        - api.{u}").unwrap();
    }
    y.push_str("  api:\n    build: ./api\n");
    let pod = Pod::new(&y).file("api/.claw-describe.json", &super::harness::http_descriptor(&names));
    let d = refused(&pod, "clawc::grant::unknown_tool", "references unknown tool \"tool0\"");
    let help = d["help"].as_str().unwrap();
    assert!(help.len() < 1000 && help.contains("(20000 tools)"), "the help lists a few names, not 20,000: {help}");
    refused(&pod, "clawc::grant::unknown_tool_service", "unknown tool service \"api.tool0\"");
}

#[test]
fn colliding_feeds_of_two_large_descriptors_are_reported_promptly() {
    let feeds: Vec<String> = (0..20_000).map(|i| format!(r#"{{"name":"f{i}","path":"/f","ttl":1}}"#)).collect();
    let desc = format!(r#"{{"version":1,"feeds":[{}]}}"#, feeds.join(","));
    let pod = Pod::new(
        "services:\n  a:\n    build: ./a\n    x-claw: {describe-file: a.json}\n  b:\n    build: ./b\n    x-claw: {describe-file: b.json}\n",
    )
    .file("a.json", &desc)
    .file("b.json", &desc);
    refused(&pod, "clawc::register::feed_collision", "feed name \"f0\" is declared by both \"a\" and \"b\"");
}

const AGENT: &str =
    "services:\n  bot:\n    image: bot\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n";

#[test]
fn granting_every_tool_to_every_replica_is_bounded() {
    // 2,000 tools × 1,000 replicas: two million tool listings from a few lines of YAML.
    let names: Vec<String> = (0..2000).map(|i| format!("op{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let pod = Pod::new("services:\n  bot:\n    image: bot\n    x-claw:\n      cllama: passthrough\n      count: 1000\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &super::harness::http_descriptor(&names));
    let d = refused(&pod, "clawc::grant::too_many_grants", "more than 1000000 tools");
    assert_eq!(d["line"], 7);
}

/// A link loop and a symlinked directory that climbs above `/`, in one image read from
/// the Docker Engine and from an OCI layout of it: both sources refuse both the same way
/// (`path_escape`, exit 2). Needs the private engine of `scripts/test`; skips without it
/// (and fails under CI=true, like the image tests).
#[test]
fn link_loops_and_escapes_are_refused_alike_by_docker_and_layouts() {
    let (Ok(host), Ok(_)) = (std::env::var("CLAWC_TEST_DOCKER_HOST"), std::env::var("CLAWC_TEST_IMAGES")) else {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "no Docker Engine fixtures under CI=true; run scripts/test");
        eprintln!("SKIPPED link_loops_and_escapes_are_refused_alike_by_docker_and_layouts: no Docker Engine");
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("etc/d.json"), super::harness::http_descriptor(&["t"])).unwrap();
    std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
    std::os::unix::fs::symlink("../../../etc", root.join("up")).unwrap();
    // Symlinks go in through ADD of a tar (COPY would follow them).
    let ctx = work.path().join("ctx");
    std::fs::create_dir_all(&ctx).unwrap();
    run("tar", &["-cf", &ctx.join("links.tar").display().to_string(), "-C", &root.display().to_string(), "."], &host);
    let oci = work.path().join("oci");
    for (tag, label) in [("loop", "/loop/d.json"), ("up", "/up/d.json")] {
        std::fs::write(ctx.join("Dockerfile"), format!("FROM scratch\nADD links.tar /\nLABEL claw.describe={label}\n")).unwrap();
        let image = format!("clawc-bombs/{tag}:1");
        run("docker", &["build", "-q", "-t", &image, &ctx.display().to_string()], &host);
        let dest = format!("oci:{}:{image}", oci.display());
        run("skopeo", &["copy", "-q", "--src-daemon-host", &host, &format!("docker-daemon:{image}"), &dest], &host);
    }
    for (tag, msg) in [("loop", "is a chain of too many links"), ("up", "leads out of the image root (\"../../../etc\")")] {
        let pod = Pod::new(&format!(
            "services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    image: clawc-bombs/{tag}:1\n"
        ));
        for source in ["docker".to_string(), format!("oci:{}", oci.display())] {
            let run = pod.run_with_env(&["--images", &source, "--no-cache"], &[("DOCKER_HOST", &host)]);
            assert_eq!(run.code, 2, "{tag} from {source}: {}", run.stdout);
            run.assert_error("clawc::image::path_escape", msg);
            assert!(!pod.out_exists());
        }
    }
}

#[track_caller]
fn run(program: &str, args: &[&str], host: &str) {
    let o = std::process::Command::new(program).env("DOCKER_HOST", host).env("DOCKER_BUILDKIT", "0").args(args).output().unwrap();
    assert!(o.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}
