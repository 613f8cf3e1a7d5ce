//! Hostile and broken inputs: each must give its diagnostic, exit 2 (or 3), never panic,
//! and write nothing.

use super::harness::{Pod, http_descriptor};

const AGENT: &str =
    "services:\n  bot:\n    image: bot\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n";

#[track_caller]
fn fails(pod: &Pod, code: &str, msg: &str) -> serde_json::Value {
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!pod.out_exists(), "a failed compile wrote output");
    run.assert_error(code, msg)
}

#[test]
fn malformed_yaml_points_at_the_position() {
    let d = fails(&Pod::new("services:\n  a: [1, 2\n  b: {}\n"), "clawc::parse::yaml_syntax", "invalid YAML");
    assert_eq!(d["file"], "claw-pod.yml");
    assert!(d["line"].as_u64().unwrap() >= 2);
}

#[test]
fn alias_bomb_is_bounded() {
    let mut y = String::from("x-a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = i - 1;
        y.push_str(&format!("x-a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
    }
    y.push_str("services: {}\n");
    fails(&Pod::new(&y), "clawc::parse::alias_budget", "aliases expand");
}

#[test]
fn deep_nesting_is_refused() {
    let deep = format!("services:\n  a:\n    x-deep: {}{}\n", "[".repeat(5000), "]".repeat(5000));
    let run = Pod::new(&deep).compile(&[]);
    assert_eq!(run.code, 2);
    assert!(run.codes().iter().any(|c| c == "clawc::parse::too_deep" || c == "clawc::parse::yaml_syntax"), "{}", run.stdout);
}

#[test]
fn oversized_files_are_refused() {
    let pod =
        Pod::new(AGENT).file("api/.claw-describe.json", &format!("{{\"version\":2,\"description\":\"{}\"}}", "x".repeat(9 * 1024 * 1024)));
    let d = fails(&pod, "clawc::source::too_large", "the limit is");
    assert_eq!(d["file"], "claw-pod.yml", "points at the service that reads it");
}

#[test]
fn wrong_types_in_the_pod() {
    let pod =
        Pod::new("services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: api\n      count: many\n      feeds: {a: 1}\n");
    fails(&pod, "clawc::pod::wrong_type", "tools must be a list, got a string");
    fails(&pod, "clawc::pod::wrong_type", "count must be an integer");
    fails(&pod, "clawc::pod::wrong_type", "feeds must be a list");
}

#[test]
fn not_a_pod() {
    fails(&Pod::new("- just\n- a list\n"), "clawc::pod::not_a_pod", "must be a mapping");
    fails(&Pod::new("version: '3'\n"), "clawc::pod::not_a_pod", "no `services:`");
}

#[test]
fn malformed_and_deep_descriptor_json() {
    let pod = Pod::new(AGENT).file("api/.claw-describe.json", "{\"version\": 2,\n  \"tools\": [\n}");
    let d = fails(&pod, "clawc::describe::invalid_json", "invalid descriptor JSON");
    assert_eq!(d["file"], "api/.claw-describe.json");
    assert_eq!(d["line"], 3);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let pod = Pod::new(AGENT).file("api/.claw-describe.json", &deep);
    fails(&pod, "clawc::describe::invalid_json", "recursion limit");
}

#[test]
fn descriptor_wrong_types_point_at_the_value() {
    let pod = Pod::new(AGENT)
        .file("api/.claw-describe.json", "{\"version\": 2,\n \"feeds\": [{\"name\": \"f\", \"path\": \"/f\", \"ttl\": \"5m\"}]}");
    let d = fails(&pod, "clawc::describe::wrong_type", "feeds[0].ttl must be an integer number of seconds, got a string");
    assert_eq!((d["line"].as_u64(), d["column"].as_u64()), (Some(2), Some(47)));
}

#[test]
fn invalid_input_schema_names_the_tool_and_the_spot() {
    let desc = r#"{"version":2,"tools":[{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"a":{"type":"strng"}}},"http":{"method":"GET","path":"/t"}}]}"#;
    let pod = Pod::new("services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", desc);
    let d = fails(&pod, "clawc::describe::input_schema", "tools[0]: inputSchema is not a valid JSON Schema");
    let col = d["column"].as_u64().unwrap() as usize;
    assert_eq!(&desc[col - 1..col + 6], "\"strng\"");
}

#[test]
fn label_path_escaping_the_build_context() {
    let pod = Pod::new(AGENT).file("api/Dockerfile", "FROM scratch\nLABEL claw.describe=../../etc/passwd\n");
    fails(&pod, "clawc::source::path_escape", "uses `..` to leave its build context");
}

#[test]
fn label_symlink_escaping_the_build_context() {
    let pod = Pod::new(AGENT)
        .file("api/Dockerfile", "FROM scratch\nLABEL claw.describe=/d.json\n")
        .file("outside.json", &http_descriptor(&["t"]));
    std::os::unix::fs::symlink(pod.path("outside.json"), pod.path("api/d.json")).unwrap();
    fails(&pod, "clawc::source::path_escape", "symlink that leads out");
}

#[test]
fn descriptor_skill_escaping_the_build_context() {
    let desc = http_descriptor(&["t"]).replace("\"version\":2", "\"version\":2,\"skill\":\"../secrets.md\"");
    let pod = Pod::new(AGENT).file("api/.claw-describe.json", &desc).file("secrets.md", "nope");
    let d = fails(&pod, "clawc::source::path_escape", "descriptor skill");
    assert_eq!(d["file"], "api/.claw-describe.json");
}

#[test]
fn missing_descriptor_skill() {
    let desc = http_descriptor(&["t"]).replace("\"version\":2", "\"version\":2,\"skill\":\"SKILL.md\"");
    fails(
        &Pod::new(AGENT).file("api/.claw-describe.json", &desc),
        "clawc::source::skill_not_found",
        "descriptor skill \"SKILL.md\" was not found in the build context",
    );
}

/// A service without a build context resolves its descriptor's skill beside the
/// descriptor file (`describe-file`, `--descriptor`), and messages name that boundary.
#[test]
fn a_skill_without_a_build_context_is_confined_to_the_descriptors_directory() {
    let yaml = "services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    image: api\n";
    let with_skill = |skill: &str| http_descriptor(&["t"]).replace("\"version\":2", &format!("\"version\":2,\"skill\":\"{skill}\""));
    let pod = Pod::new(yaml).file("descriptors/api.json", &with_skill("../secrets.md")).file("secrets.md", "nope");
    let run = pod.compile(&["--descriptor", "api=descriptors/api.json"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(!pod.out_exists());
    let d =
        run.assert_error("clawc::source::path_escape", "descriptor skill \"../secrets.md\" uses `..` to leave the descriptor's directory");
    assert_eq!((d["file"].as_str(), d["line"].as_u64()), (Some("descriptors/api.json"), Some(1)));
    assert!(d["help"].as_str().unwrap().contains("inside the descriptor's directory (`descriptors/`)"), "{d}");
    let pod = Pod::new(yaml).file("descriptors/api.json", &with_skill("SKILL.md"));
    let run = pod.compile(&["--descriptor", "api=descriptors/api.json"]);
    let d = run.assert_error("clawc::source::skill_not_found", "descriptor skill \"SKILL.md\" was not found in the descriptor's directory");
    assert!(d["help"].as_str().unwrap().contains("expected `descriptors/SKILL.md`"), "{d}");
    assert!(!pod.out_exists());
}

#[test]
fn pod_author_paths_may_leave_the_pod_directory_but_not_the_repository() {
    let yaml = "services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ../svc\n    x-claw:\n      describe-file: ../svc/x.json\n";
    let repo = Pod::new("").file("pods/claw-pod.yml", yaml).file("svc/x.json", &http_descriptor(&["t"]));
    let run = |root: Option<&str>| {
        let mut c = super::harness::clawc();
        c.current_dir(repo.path("pods")).args(["compile", "claw-pod.yml", "-o", "out", "--format", "json"]);
        if let Some(r) = root {
            c.args(["--root", r]);
        }
        c.output().unwrap()
    };
    // No repository: the root is the pod's directory, and ../svc is outside it.
    let o = run(None);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stdout).contains("clawc::source::path_escape"));
    assert!(!repo.path("pods/out").exists());
    // --root widens it; so does the git work tree that holds the pod.
    assert_eq!(run(Some("..")).status.code(), Some(0));
    std::fs::remove_dir_all(repo.path("pods/out")).unwrap();
    std::fs::create_dir(repo.path(".git")).unwrap();
    // describe-file makes `api` an x-claw service itself; it inherits nothing and has no tools.
    let o = run(None);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn non_utf8_pod() {
    let pod = Pod::new("");
    std::fs::write(pod.path("claw-pod.yml"), b"services:\n  a: \xff\xfe\n").unwrap();
    fails(&pod, "clawc::source::not_utf8", "not UTF-8");
}

#[test]
fn leaked_secret_is_refused_without_printing_it() {
    let desc = http_descriptor(&["t"]).replace(
        "\"description\":\"svc\"",
        "\"description\":\"token s3cr3t-token-value\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}",
    );
    let pod = Pod::new("services:\n  bot:\n    environment:\n      API_TOKEN: s3cr3t-token-value\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n      surfaces: [service://api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &desc);
    for mode in ["redact", "inline"] {
        let run = pod.compile(&["--secrets", mode]);
        assert_eq!(run.code, 2, "{mode}: {}", run.stdout);
        run.assert_error("clawc::secrets::leak", "secret value of API_TOKEN would be written to `context/bot/CLAWDAPUS.md`");
        assert!(!run.stdout.contains("s3cr3t-token-value") && !run.stderr.contains("s3cr3t-token-value"));
        assert!(!pod.out_exists());
    }
}

#[test]
fn human_format_renders_a_snippet_and_help() {
    let pod = Pod::new("services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [nope]\n");
    let o = super::harness::clawc().current_dir(pod.dir.path()).args(["compile", "-o", "out"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("clawc::grant::unknown_tool_service"), "{err}");
    assert!(err.contains("claw-pod.yml:5:"), "{err}");
    assert!(err.contains("help:"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
}

#[test]
fn bad_command_lines_exit_2() {
    let pod = Pod::new(AGENT);
    assert_eq!(pod.compile(&["--descriptor", "nonsense"]).code, 2);
    assert_eq!(pod.compile(&["--secrets", "maybe"]).code, 2);
    let run = pod.compile(&["--descriptor", "nobody=x.json"]);
    assert_eq!(run.code, 2);
    run.assert_error("clawc::source::unknown_service", "\"nobody\"");
    let run = Pod::new(AGENT).compile(&["--env-file", "missing.env"]);
    run.assert_error("clawc::source::missing_file", "--env-file");
}

#[test]
fn missing_pod_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = super::harness::clawc().current_dir(dir.path()).args(["compile", "--format", "json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stdout).contains("clawc::source::missing_file"));
}
