//! Grants that a typo cannot widen, and the diagnostics around grants: what each says,
//! where it points, and that nothing is written when one is an error.

use super::harness::{Pod, http_descriptor};

#[track_caller]
fn fails(pod: &Pod, extra: &[&str], code: &str, msg: &str) -> serde_json::Value {
    let run = pod.compile(extra);
    assert_eq!(run.code, 2, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!pod.out_exists(), "a failed compile wrote output");
    run.assert_error(code, msg)
}

#[track_caller]
fn at(d: &serde_json::Value, line: u64, column: u64) {
    assert_eq!((d["file"].as_str(), d["line"].as_u64(), d["column"].as_u64()), (Some("claw-pod.yml"), Some(line), Some(column)), "{d}");
}

const DEFAULTS: &str = "x-claw:\n  tools-defaults: [api]\nservices:\n  api:\n    build: ./api\n  reporter:\n    image: r\n    x-claw:\n      cllama: passthrough\n";

#[test]
fn a_misspelt_tools_key_is_an_error_not_an_inherited_grant() {
    // `tool: []` meant `tools: []`; ignored, reporter would inherit tools-defaults.
    let pod = Pod::new(&format!("{DEFAULTS}      tool: []\n")).file("api/.claw-describe.json", &http_descriptor(&["quote"]));
    let d = fails(
        &pod,
        &[],
        "clawc::pod::misspelt_grant_key",
        "service \"reporter\": unknown x-claw key `tool` looks like the grant key `tools` misspelt",
    );
    at(&d, 10, 7);
    let help = d["help"].as_str().unwrap();
    assert!(help.starts_with("did you mean `tools`?") && help.contains("silently inherit the pod's `tools-defaults`"), "{help}");
    // Spelt right, it compiles and grants nothing.
    let pod = Pod::new(&format!("{DEFAULTS}      tools: []\n")).file("api/.claw-describe.json", &http_descriptor(&["quote"]));
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(!pod.path("out/context/reporter/tools.json").exists());
}

#[test]
fn near_misses_of_every_grant_key_are_errors_and_other_keys_warnings() {
    for (key, meant) in [
        ("toosl", "tools"),
        ("Tools", "tools"),
        ("feed", "feeds"),
        ("surface", "surfaces"),
        ("memry", "memory"),
        ("tool-polcy", "tool-policy"),
    ] {
        let pod = Pod::new(&format!("{DEFAULTS}      {key}: []\n"));
        let d = fails(&pod, &[], "clawc::pod::misspelt_grant_key", &format!("`{key}` looks like the grant key `{meant}` misspelt"));
        at(&d, 10, 7);
    }
    // At pod level, the defaults' own names.
    let pod = Pod::new("x-claw:\n  feeds-defualts: [prices]\nservices:\n  a:\n    image: a\n");
    let d = fails(&pod, &[], "clawc::pod::misspelt_grant_key", "`feeds-defualts` looks like the grant key `feeds-defaults` misspelt");
    at(&d, 2, 3);
    // A grant default written on a service would be ignored too.
    let pod = Pod::new(&format!("{DEFAULTS}      tools-defaults: []\n"));
    let d = fails(&pod, &[], "clawc::pod::misplaced_key", "\"tools-defaults\" is a pod-level field and cannot be declared on a service");
    at(&d, 10, 7);
    assert!(d["help"].as_str().unwrap().contains("write `tools:`"), "{d}");
    // Farther keys stay warnings.
    let pod = Pod::new(&format!("{DEFAULTS}      tools: []\n      agnet: ./AGENTS.md\n"))
        .file("api/.claw-describe.json", &http_descriptor(&["quote"]));
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.codes(), ["clawc::pod::unknown_key"]);
}

/// A grant is named by its key path as written, so a grant spliced in from the defaults
/// is not given its position in the expanded list.
#[test]
fn grants_are_named_by_their_key_path_as_written() {
    let pod = Pod::new(
        "x-claw:\n  tools-defaults:\n    - api\n    - apx\nservices:\n  api:\n    build: ./api\n  a:\n    image: a\n    x-claw:\n      cllama: passthrough\n      tools: [api, ..., apz]\n  b:\n    image: b\n    x-claw:\n      cllama: passthrough\n      tools:\n        - service: api\n          allow: []\n",
    )
    .file("api/.claw-describe.json", &http_descriptor(&["quote"]));
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(!pod.out_exists());
    let d = run.assert_error("clawc::pod::invalid_value", "tools[0]: allow must not be empty");
    at(&d, 19, 18);
    // Clawdapus parses a service only when the pod has no parse error: fix b, then resolve.
    let fixed = std::fs::read_to_string(pod.path("claw-pod.yml")).unwrap().replace("allow: []", "allow: [quote]");
    std::fs::write(pod.path("claw-pod.yml"), fixed).unwrap();
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    let d =
        run.assert_error("clawc::grant::unknown_tool_service", "service \"a\": tools-defaults[1] references unknown tool service \"apx\"");
    at(&d, 4, 7);
    let d = run.assert_error("clawc::grant::unknown_tool_service", "service \"a\": tools[2] references unknown tool service \"apz\"");
    at(&d, 12, 25);
    assert_eq!(run.codes().len(), 2, "b declares its own tools and inherits nothing: {}", run.stdout);
}

/// The label of a diagnostic about a grant covers the grant, not the next key too.
#[test]
fn an_auth_env_label_ends_with_its_grant() {
    let desc = r#"{"version":2,"description":"api","auth":{"type":"bearer","env":"API_TOKEN"},"tools":[{"name":"quote","description":"q","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/q"}}]}"#;
    let pod = Pod::new(
        "services:\n  agent:\n    image: a\n    x-claw:\n      cllama: passthrough\n      tools:\n        - service: api\n          allow: [quote]   # the grant\n\n      feeds: []\n  api:\n    build: ./api\n",
    )
    .file("api/.claw-describe.json", desc);
    let o = super::harness::clawc().current_dir(pod.dir.path()).args(["compile", "claw-pod.yml", "-o", "out"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("clawc::grant::auth_env"), "{stderr}");
    let drawn: Vec<&str> = stderr.lines().filter(|l| l.contains("─▶")).collect();
    assert_eq!(drawn.len(), 2, "{stderr}");
    assert!(drawn[0].ends_with("- service: api") && drawn[1].ends_with("allow: [quote]   # the grant"), "{stderr}");
    assert!(!pod.out_exists());
}

const PROVIDER: &str = "x-claw:\n  tools-defaults: [api]\nservices:\n  agent:\n    image: agent\n    x-claw:\n      cllama: passthrough\n  api:\n    image: api\n";

/// A provider with only `x-claw.describe-file` is an agent (as in Clawdapus) and inherits
/// `tools-defaults`. The error is about that, at its describe-file, with the right fixes;
/// not a runner or cllama error at the defaults line.
#[test]
fn a_provider_described_by_describe_file_is_an_agent() {
    let api = http_descriptor(&["quote"]);
    let pod = Pod::new(&format!("{PROVIDER}    x-claw:\n      describe-file: api.json\n")).file("api.json", &api);
    let d = fails(
        &pod,
        &[],
        "clawc::grant::provider_is_agent",
        "service \"api\" is an agent because it has x-claw (only describe-file), so it inherits the pod's tools-defaults, and it has no cllama proxy to run them through",
    );
    at(&d, 11, 22);
    assert_eq!(d["related"][0]["line"], 2, "{d}");
    let help = d["help"].as_str().unwrap();
    assert!(help.contains("`--descriptor api=api.json`") && help.contains("give it `tools: []`") && !help.contains("cllama"), "{help}");
    assert_eq!(pod.compile(&[]).codes(), ["clawc::grant::provider_is_agent"], "no runner or cllama error besides");

    // Each fix compiles, with one agent.
    let agents = |run: &super::harness::Run| {
        let summary: serde_json::Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
        summary["summary"]["agents"].as_u64()
    };
    let described = Pod::new(PROVIDER).file("api.json", &api);
    let run = described.compile(&["--descriptor", "api=api.json"]);
    assert_eq!((run.code, agents(&run)), (0, Some(1)), "{}", run.stdout);
    assert!(described.path("out/context/agent/tools.json").exists());
    let built = Pod::new(&format!("{PROVIDER}    build: ./api\n")).file("api/.claw-describe.json", &api);
    let run = built.compile(&[]);
    assert_eq!((run.code, agents(&run)), (0, Some(1)), "{}", run.stdout);
    // Kept an agent that takes nothing: two agents, no error.
    let opted_out = Pod::new(&format!("{PROVIDER}    x-claw:\n      describe-file: api.json\n      tools: []\n")).file("api.json", &api);
    let run = opted_out.compile(&[]);
    assert_eq!((run.code, agents(&run)), (0, Some(2)), "{}", run.stdout);
    assert!(run.codes().is_empty(), "{}", run.stdout);
}

/// With a cllama proxy (from `cllama-defaults`) such a provider compiles, as Clawdapus
/// compiles it: an agent granted the defaults. A warning says so.
#[test]
fn a_describe_file_provider_with_a_proxy_is_warned_about() {
    let pod = Pod::new(&format!(
        "x-claw:\n  cllama-defaults: {{proxy: [passthrough]}}\n{}    x-claw:\n      describe-file: api.json\n",
        PROVIDER.trim_start_matches("x-claw:\n")
    ))
    .file("api.json", &http_descriptor(&["quote"]));
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let d = run.diagnostics().into_iter().find(|d| d["code"] == "clawc::grant::provider_is_agent").expect("a warning");
    assert_eq!(d["severity"], "warning");
    assert!(d["message"].as_str().unwrap().ends_with("is compiled as an agent with them"), "{d}");
    at(&d, 12, 22);
    assert!(pod.path("out/context/api/tools.json").exists(), "compiled as an agent, as Clawdapus does");
}

/// `examples/minimal` says it has one agent, and compiles one.
#[test]
fn the_minimal_example_has_one_agent() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/minimal");
    let work = tempfile::tempdir().unwrap();
    for (rel, bytes) in super::harness::tree(&root) {
        let p = work.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let o = super::harness::clawc()
        .current_dir(work.path())
        .args(["compile", "claw-pod.yml", "-o", "out", "--images", "none", "--format", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains(r#""agents":1,"#) && stdout.contains(r#""warnings":0"#), "{stdout}");
    let out = super::harness::tree(&work.path().join("out"));
    let contexts: Vec<&str> = out.keys().filter(|k| k.starts_with("context/")).map(String::as_str).collect();
    assert_eq!(contexts, ["context/assistant/CLAWDAPUS.md", "context/assistant/tools.json"]);
}

fn bearer_pod(description: &str) -> Pod {
    let desc = http_descriptor(&["a"])
        .replace("\"description\":\"svc\"", "\"description\":\"svc\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}")
        .replace("\"does a\"", &serde_json::json!(description).to_string());
    Pod::new("services:\n  bot:\n    environment: {API_TOKEN: \"${API_TOKEN}\"}\n    x-claw:\n      cllama: passthrough\n      persona: ${PERSONA:-none}\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &desc)
        .file(".env", "API_TOKEN=tok-secret-0123456789\n")
}

/// A leak points at the input its value is copied from (never drawing the line, which
/// holds the value), or at `.env` when a placeholder carries it.
#[test]
fn a_leak_points_at_the_input_it_comes_from_without_showing_it() {
    let pod = bearer_pod("uses tok-secret-0123456789");
    let d = fails(&pod, &[], "clawc::secrets::leak", "the secret value of API_TOKEN would be written to `context/bot/tools.json`");
    assert_eq!((d["file"].as_str(), d["line"].as_u64()), (Some("api/.claw-describe.json"), Some(1)), "{d}");
    let desc = pod.read("api/.claw-describe.json");
    let col = d["column"].as_u64().unwrap() as usize;
    assert!(desc[col - 1..].starts_with("tok-secret-0123456789"), "{d}");
    assert!(d["help"].as_str().unwrap().contains("from this input: remove it here"), "{d}");
    for format in ["human", "json"] {
        let o = super::harness::clawc().current_dir(pod.dir.path()).args(["compile", "--format", format]).output().unwrap();
        let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(all.contains("api/.claw-describe.json:1:") || all.contains("\"line\":1"), "{all}");
        assert!(!all.contains("tok-secret"), "{format} output shows the value: {all}");
    }
    // Through a placeholder: the value is defined in .env, and only its line is shown.
    let pod = bearer_pod("does a");
    std::fs::write(pod.path(".env"), "PERSONA=tok-secret-0123456789\nAPI_TOKEN=tok-secret-0123456789\n").unwrap();
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    let d = run.assert_error("clawc::secrets::leak", "API_TOKEN would be written to `context/bot/CLAWDAPUS.md`");
    assert_eq!((d["file"].as_str(), d["line"].as_u64(), d["column"].as_u64()), (Some(".env"), Some(1), Some(9)), "{d}");
    assert!(d["help"].as_str().unwrap().contains("through a `${API_TOKEN}` placeholder"), "{d}");
    assert!(!run.stdout.contains("tok-secret") && !run.stderr.contains("tok-secret"));
}

/// A committed tree holding a token: the message names the file, the help its line and
/// column, and nothing shows the value.
#[test]
fn a_committed_secret_says_where_it_is() {
    let pod = bearer_pod("does a");
    assert_eq!(pod.compile(&["--secrets", "inline"]).code, 0);
    let tools = pod.read("out/context/bot/tools.json");
    let (line, text) = tools.lines().enumerate().find(|(_, l)| l.contains("tok-secret")).unwrap();
    let column = text.find("tok-secret").unwrap() + 1;
    let o = super::harness::clawc()
        .current_dir(pod.dir.path())
        .args(["compile", "claw-pod.yml", "-o", "out", "--check", "--format", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    let want = format!("the value of API_TOKEN is first at line {}, column {column} of `context/bot/tools.json`", line + 1);
    assert!(stdout.contains(&want), "{want}\n{stdout}");
    assert!(!stdout.contains("tok-secret") && !String::from_utf8_lossy(&o.stderr).contains("tok-secret"));
}

fn weather(environment: &str) -> Pod {
    let desc = http_descriptor(&["forecast"])
        .replace("\"description\":\"svc\"", "\"description\":\"svc\",\"auth\":{\"type\":\"bearer\",\"env\":\"WEATHER_TOKEN\"}");
    Pod::new(&format!(
        "services:\n  bot:\n    image: bot\n    environment: {environment}\n    x-claw:\n      cllama: passthrough\n      tools: [weather]\n  weather:\n    build: ./weather\n"
    ))
    .file("weather/.claw-describe.json", &desc)
}

/// `environment: [VAR]` / `{VAR: }` passes VAR through, as Compose does: its value is the
/// one `.env` or the process environment gives it (the process wins).
#[test]
fn pass_through_variables_are_honoured_for_auth() {
    for environment in ["[WEATHER_TOKEN]", "{WEATHER_TOKEN: }", "{WEATHER_TOKEN: ~}"] {
        let pod = weather(environment).file(".env", "WEATHER_TOKEN=from-dotenv-0123456789\n");
        let run = pod.compile(&["--secrets", "inline"]);
        assert_eq!(run.code, 0, "{environment}: {}", run.stdout);
        assert!(pod.read("out/context/bot/tools.json").contains(r#""token": "from-dotenv-0123456789""#), "{environment}");
        let run = pod.run_with_env(&["--secrets", "inline"], &[("WEATHER_TOKEN", "from-process-0123456789")]);
        assert_eq!(run.code, 0, "{}", run.stdout);
        assert!(pod.read("out/context/bot/tools.json").contains(r#""token": "from-process-0123456789""#), "the process environment wins");
        // Redacted: the variable, never its value, anywhere in the tree.
        let run = pod.compile(&[]);
        assert_eq!(run.code, 0, "{}", run.stdout);
        assert!(pod.read("out/context/bot/tools.json").contains(r#""token": "${WEATHER_TOKEN}""#));
        for (rel, bytes) in super::harness::tree(&pod.path("out")) {
            assert!(!String::from_utf8_lossy(&bytes).contains("from-dotenv"), "{rel} holds the value");
        }
    }
}

/// A passed-through value is a secret like any other: the leak scan knows it.
#[test]
fn a_passed_through_value_is_scanned_for_leaks() {
    let pod = weather("[WEATHER_TOKEN]").file(".env", "WEATHER_TOKEN=does forecast\n");
    let d = fails(&pod, &[], "clawc::secrets::leak", "the secret value of WEATHER_TOKEN would be written to");
    assert_eq!(d["file"], "weather/.claw-describe.json", "{d}");
}

/// Passed through but set nowhere: with `--secrets inline` there is no token to write.
#[test]
fn a_pass_through_variable_set_nowhere_is_an_auth_error_inline() {
    let pod = weather("[WEATHER_TOKEN]");
    let d = fails(
        &pod,
        &["--secrets", "inline"],
        "clawc::grant::auth_env",
        "service env passes \"WEATHER_TOKEN\" through without a value, and neither .env nor the environment sets it",
    );
    at(&d, 7, 15);
    assert_eq!((d["related"][0]["line"].as_u64(), d["related"][0]["column"].as_u64()), (Some(4), Some(19)), "{d}");
    assert!(d["help"].as_str().unwrap().starts_with("set WEATHER_TOKEN in the pod's .env or in the environment clawc runs in"), "{d}");
    // Redacted, the declaration is enough (the value is given at deploy time).
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
}
