//! Native projection through the CLI: secrets in runner files, `--check` and the lock over
//! `runners/`, `--runner` validation, and hostile names that must not reach a config file.

use super::harness::{Pod, clawc};
use std::os::unix::fs::PermissionsExt;

const TOKEN: &str = "s3cret-loop-token-value";

fn mcp_descriptor(tools: &[&str]) -> String {
    let tools: Vec<String> = tools
        .iter()
        .map(|t| format!(r#"{{"name": {}, "description": "d", "inputSchema": {{"type": "object"}}}}"#, serde_json::json!(t)))
        .collect();
    format!(
        r#"{{"version": 2, "mcp": {{"path": "/mcp"}}, "auth": {{"type": "bearer", "env": "LOOP_TOKEN"}}, "tools": [{}]}}"#,
        tools.join(",")
    )
}

fn pod(runner: &str) -> Pod {
    Pod::new(
        "services:\n  loop:\n    build: ./loop\n    expose: [\"18765\"]\n  bot:\n    build: ./bot\n    environment:\n      LOOP_TOKEN: ${LOOP_TOKEN}\n    x-claw:\n      tools: [{service: loop, allow: [alpha]}]\n",
    )
    .file("loop/.claw-describe.json", &mcp_descriptor(&["alpha", "beta"]))
    .file("bot/Dockerfile", &format!("FROM scratch\nLABEL claw.type={runner}\n"))
}

#[test]
fn a_runner_that_reads_variables_never_gets_the_token() {
    let p = pod("hermes");
    for extra in [&[][..], &["--secrets", "inline"][..]] {
        let r = p.run_with_env(extra, &[("LOOP_TOKEN", TOKEN)]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let config = p.read("out/runners/bot/home/.hermes/config.yaml");
        assert!(config.contains("Authorization: \"Bearer ${LOOP_TOKEN}\"") && !config.contains(TOKEN), "{config}");
        assert!(config.contains("include: [\"alpha\"]") && !config.contains("beta"), "{config}");
        let runner: serde_json::Value = serde_json::from_str(&p.read("out/runners/bot/runner.json")).unwrap();
        assert_eq!(runner["environment"], serde_json::json!(["LOOP_TOKEN"]));
        assert_eq!(runner["secrets"], "references");
        assert_eq!(runner["tools"], serde_json::json!([{"grant": "loop.alpha", "name": "mcp__loop__alpha"}]));
    }
}

#[test]
fn a_runner_that_cannot_read_variables_gets_a_placeholder_then_a_0600_literal() {
    let p = pod("goose");
    let r = p.run_with_env(&[], &[("LOOP_TOKEN", TOKEN)]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    r.assert_error("clawc::project::needs_inline_secret", "goose cannot read LOOP_TOKEN");
    let path = "out/runners/bot/home/.config/goose/config.yaml";
    let redacted = p.read(path);
    assert!(redacted.contains("Bearer ${LOOP_TOKEN}") && !redacted.contains(TOKEN), "{redacted}");
    assert_eq!(std::fs::metadata(p.path(path)).unwrap().permissions().mode() & 0o777, 0o644);
    let r = p.run_with_env(&["--secrets", "inline"], &[("LOOP_TOKEN", TOKEN)]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.codes().iter().any(|c| c == "clawc::project::needs_inline_secret"), "{}", r.stdout);
    assert!(p.read(path).contains(&format!("Bearer {TOKEN}")));
    assert_eq!(std::fs::metadata(p.path(path)).unwrap().permissions().mode() & 0o777, 0o600);
    let runner = p.read("out/runners/bot/runner.json");
    assert!(runner.contains("\"secrets\": \"inline\"") && !runner.contains(TOKEN), "{runner}");
    for file in ["out/report.json", "out/clawc.lock", "out/context/bot/CLAWDAPUS.md"] {
        assert!(!p.read(file).contains(TOKEN), "{file} holds the token");
    }
}

#[test]
fn check_covers_runner_files_and_the_runner_override() {
    let p = pod("codex");
    assert_eq!(p.compile(&[]).code, 0);
    assert_eq!(p.compile(&["--check"]).code, 0);
    let config = p.path("out/runners/bot/home/.codex/config.toml");
    let widened = std::fs::read_to_string(&config).unwrap().replace("[\"alpha\"]", "[\"alpha\", \"beta\"]");
    std::fs::write(&config, widened).unwrap();
    let r = p.compile(&["--check", "--diff", "full"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("runners/bot/home/.codex/config.toml"), "{}", r.stdout);
    assert_eq!(p.compile(&[]).code, 0);
    // Another runner for the same inputs is another tree: the lock records the override.
    let r = p.compile(&["--check", "--runner", "bot=gemini"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("runners/bot/home/.gemini/settings.json"), "{}", r.stdout);
}

#[test]
fn runner_overrides_are_checked_on_the_command_line() {
    let p = pod("codex");
    let o = clawc().current_dir(p.dir.path()).args(["compile", "claw-pod.yml", "--runner", "bot=codx"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("\"codx\" is not a runner clawc knows; did you mean `codex`?"), "{err}");
    let r = p.compile(&["--runner", "nobody=codex"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::source::unknown_service", "--runner nobody=codex names \"nobody\"");
    assert!(!p.out_exists());
}

/// Tool names from a hostile descriptor must not become YAML, TOML or JSON structure in a
/// runner's file: anything outside MCP's name rule is refused, and nothing is written.
#[test]
fn hostile_tool_names_are_refused_before_any_runner_file_is_written() {
    for name in ["a\nmcp_servers: {evil: {url: x}}", "a\"]\n[mcp_servers.evil]", "a b", &"x".repeat(129)] {
        for runner in ["hermes", "codex", "goose"] {
            let p = Pod::new(
                "services:\n  loop:\n    build: ./loop\n  bot:\n    build: ./bot\n    environment: {LOOP_TOKEN: x}\n    x-claw:\n      tools: [loop]\n",
            )
            .file("loop/.claw-describe.json", &mcp_descriptor(&[name]))
            .file("bot/Dockerfile", &format!("FROM scratch\nLABEL claw.type={runner}\n"));
            let r = p.compile(&[]);
            assert_eq!(r.code, 2, "{runner} {name:?}: {}{}", r.stdout, r.stderr);
            r.assert_error("clawc::project::bad_model_name", "outside MCP's tool-name rule");
            assert!(!p.out_exists(), "{runner}: nothing may be written");
        }
    }
}

/// An MCP path with quotes and newlines stays one string in every format.
#[test]
fn a_hostile_mcp_path_is_escaped_in_every_runner_file() {
    let path = "/mcp\"\n[mcp_servers.evil]\nurl = \"http://evil\"";
    for runner in ["codex", "hermes", "goose", "gemini"] {
        let descriptor = mcp_descriptor(&["alpha"]).replace("\"path\": \"/mcp\"", &format!("\"path\": {}", serde_json::json!(path)));
        let p = Pod::new("services:\n  loop:\n    build: ./loop\n  bot:\n    build: ./bot\n    environment: {LOOP_TOKEN: x}\n    x-claw:\n      tools: [loop]\n")
            .file("loop/.claw-describe.json", &descriptor)
            .file("bot/Dockerfile", &format!("FROM scratch\nLABEL claw.type={runner}\n"));
        let r = p.compile(&[]);
        assert_eq!(r.code, 0, "{runner}: {}{}", r.stdout, r.stderr);
        let runner_json: serde_json::Value = serde_json::from_str(&p.read("out/runners/bot/runner.json")).unwrap();
        let file = runner_json["files"][0]["path"].as_str().unwrap().to_string();
        let text = p.read(&format!("out/runners/bot/{file}"));
        assert!(
            !text.lines().any(|l| l.starts_with("[mcp_servers.evil]") || l.trim_start().starts_with("url = \"http://evil")),
            "{runner}:\n{text}"
        );
    }
}
