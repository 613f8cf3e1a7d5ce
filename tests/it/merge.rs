//! `clawc merge FRAGMENT TARGET`: for each format, the user's comments, keys and servers
//! survive, a stale server entry is replaced whole (never widened), a second merge changes
//! no byte, a missing target is created; `--check` and `--stdout`; every bad input exits
//! with its code and writes nothing. `UPDATE_GOLDEN=1 cargo test --test it merge_doc`
//! rewrites `docs/merge.md` from `src/merge/rules.rs`.

use super::harness::{Run, clawc};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A temporary directory with a compiled tree (`out/runners/a/…`) and a user's home.
struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Self {
        Case { dir: tempfile::tempdir().unwrap() }
    }

    /// Writes the fragment `out/runners/a/<rel>` (e.g. `home/.codex/config.toml`).
    fn fragment(&self, rel: &str, text: &str) -> PathBuf {
        self.write(&format!("out/runners/a/{rel}"), text)
    }

    /// Writes `user/<rel>`, the user's own file.
    fn target(&self, rel: &str, text: &str) -> PathBuf {
        self.write(&format!("user/{rel}"), text)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

fn merge(fragment: &Path, target: &Path, extra: &[&str]) -> Run {
    let o = clawc().arg("merge").arg(fragment).arg(target).args(extra).output().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Merges, asserts success, then merges again and asserts that no byte changed.
#[track_caller]
fn merged_twice(fragment: &Path, target: &Path, extra: &[&str]) -> String {
    let run = merge(fragment, target, extra);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let once = read(target);
    let again = merge(fragment, target, extra);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert!(again.stdout.contains("is up to date"), "{}", again.stdout);
    assert_eq!(read(target), once, "a second merge changed the file");
    once
}

/// Runs a merge that must fail with `code` (exit `exit`) and leave `target` as it was.
#[track_caller]
fn refused(fragment: &Path, target: &Path, extra: &[&str], code: &str, exit: i32) -> Run {
    let before = std::fs::symlink_metadata(target).ok().filter(std::fs::Metadata::is_file).map(|_| std::fs::read(target).unwrap());
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    let run = merge(fragment, target, &args);
    assert_eq!(run.code, exit, "{}{}", run.stdout, run.stderr);
    assert!(run.codes().iter().any(|c| c == code), "no {code} in {:?}\n{}{}", run.codes(), run.stdout, run.stderr);
    let after = std::fs::symlink_metadata(target).ok().filter(std::fs::Metadata::is_file).map(|_| std::fs::read(target).unwrap());
    assert_eq!(before, after, "the target was written");
    let leftovers: Vec<_> = std::fs::read_dir(target.parent().unwrap())
        .map(|d| {
            d.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.contains("clawc-merge")).collect()
        })
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    run
}

const CODEX_TARGET: &str = r#"# my codex config
model = "o3" # pinned on purpose

[mcp_servers.mine]
command = "my-server"

# clawc's server, stale
[mcp_servers.api]
url = "http://api:8080/mcp"
enabled_tools = ["a", "b", "c"]
extra = true

[mcp_servers.api.env]
OLD = "1"

[profiles.fast]
model = "o4-mini" # keep
"#;

const CODEX_FRAGMENT: &str = r#"[mcp_servers.api]
url = "http://api:8080/mcp"
enabled_tools = ["a"]

[mcp_servers.feeds]
url = "http://feeds:8080/mcp"
enabled_tools = ["latest"]
"#;

#[test]
fn toml_comments_and_foreign_servers_survive_and_a_stale_entry_is_replaced_whole() {
    let c = Case::new();
    let f = c.fragment("home/.codex/config.toml", CODEX_FRAGMENT);
    let t = c.target(".codex/config.toml", CODEX_TARGET);
    let out = merged_twice(&f, &t, &[]);
    assert_eq!(
        out,
        r#"# my codex config
model = "o3" # pinned on purpose

[mcp_servers.mine]
command = "my-server"

# clawc's server, stale
[mcp_servers.api]
url = "http://api:8080/mcp"
enabled_tools = ["a"]

[mcp_servers.feeds]
url = "http://feeds:8080/mcp"
enabled_tools = ["latest"]

[profiles.fast]
model = "o4-mini" # keep
"#
    );
}

#[test]
fn toml_into_a_file_without_servers_and_with_inline_tables() {
    let c = Case::new();
    let f = c.fragment("home/.codex/config.toml", CODEX_FRAGMENT);
    let t =
        c.target(".codex/config.toml", "model = \"o3\"\nmcp_servers = { mine = { command = \"x\" }, api = { url = \"u\", extra = 1 } }\n");
    let out = merged_twice(&f, &t, &[]);
    assert!(out.starts_with("model = \"o3\"\nmcp_servers = { mine = { command = \"x\" }, api = {"), "{out}");
    assert!(!out.contains("extra") && out.contains("enabled_tools = [\"a\"]") && out.contains("feeds"), "{out}");
}

const CLAUDE_TARGET: &str = r#"{
  "numStartups": 12,
  "theme": "dark",
  "mcpServers": {
    "mine": {"command": "my-server", "args": []},
    "api": {"type": "http", "url": "http://old", "headers": {"X-Extra": "1"}}
  },
  "projects": {"/w": {"allowedTools": []}}
}
"#;

#[test]
fn json_foreign_keys_survive_and_a_stale_entry_is_replaced_whole() {
    let c = Case::new();
    let f = c.fragment(
        "home/.claude.json",
        "{\n  \"mcpServers\": {\n    \"api\": {\n      \"type\": \"http\",\n      \"url\": \"http://api:8080/mcp\"\n    }\n  }\n}\n",
    );
    let t = c.target(".claude.json", CLAUDE_TARGET);
    let out = merged_twice(&f, &t, &[]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["mcpServers"]["api"], serde_json::json!({"type": "http", "url": "http://api:8080/mcp"}));
    assert_eq!(v["mcpServers"]["mine"]["command"], "my-server");
    assert_eq!(v["numStartups"], 12);
    assert!(out.starts_with("{\n  \"numStartups\": 12,\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"mine\": {\"command\": \"my-server\", \"args\": []},\n"), "{out}");
    assert!(out.ends_with("  \"projects\": {\"/w\": {\"allowedTools\": []}}\n}\n"), "{out}");
}

#[test]
fn jsonc_comments_survive() {
    let c = Case::new();
    let f = c.fragment(
        "home/.gemini/settings.json",
        "{\"mcpServers\": {\"api\": {\"httpUrl\": \"http://api/mcp\", \"includeTools\": [\"a\"]}}}\n",
    );
    let t = c.target(
        ".gemini/settings.json",
        "{\n  // my theme\n  \"theme\": \"GitHub\", /* inline */\n  \"mcpServers\": {\n    // stale\n    \"api\": {\"httpUrl\": \"http://api/mcp\", \"includeTools\": [\"a\", \"b\", \"c\"]},\n    \"mine\": {\"command\": \"x\"}, // trailing comma next\n  },\n}\n",
    );
    let out = merged_twice(&f, &t, &[]);
    for kept in ["// my theme", "/* inline */", "// trailing comma next", "\"mine\": {\"command\": \"x\"}"] {
        assert!(out.contains(kept), "{kept} lost:\n{out}");
    }
    assert!(out.contains("\"includeTools\": [\"a\"]") && !out.contains("\"b\""), "{out}");
}

#[test]
fn json5_openclaw_keeps_its_syntax() {
    let c = Case::new();
    let f = c.fragment("home/.openclaw/openclaw.json", "{\"mcp\": {\"servers\": {\"api\": {\"url\": \"http://api/mcp\"}}}}\n");
    let t = c.target(".openclaw/openclaw.json", "{\n  // JSON5\n  agent: {model: 'x'},\n  mcp: {\n    servers: {\n      api: {url: 'http://old', tools: ['a', 'b']},\n    },\n  },\n}\n");
    let out = merged_twice(&f, &t, &[]);
    assert!(out.contains("// JSON5") && out.contains("agent: {model: 'x'}"), "{out}");
    assert!(out.contains("\"url\": \"http://api/mcp\"") && !out.contains("tools"), "{out}");
}

#[test]
fn claude_permissions_of_the_fragments_servers_are_replaced_and_the_users_kept() {
    let c = Case::new();
    let f = c
        .fragment("home/.claude/settings.json", "{\"permissions\": {\"allow\": [\"mcp__api__quote\"], \"deny\": [\"mcp__api__trade\"]}}\n");
    let t = c.target(
        ".claude/settings.json",
        "{\n  \"permissions\": {\n    \"allow\": [\"Bash(ls)\", \"mcp__api__quote\", \"mcp__api__trade\", \"mcp__api\", \"mcp__apix__y\", \"mcp__mine__z\"],\n    \"deny\": [\"Read(.env)\"]\n  },\n  \"model\": \"opus\"\n}\n",
    );
    let out = merged_twice(&f, &t, &[]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["permissions"]["allow"], serde_json::json!(["Bash(ls)", "mcp__apix__y", "mcp__mine__z", "mcp__api__quote"]));
    assert_eq!(v["permissions"]["deny"], serde_json::json!(["Read(.env)", "mcp__api__trade"]));
    assert_eq!(v["model"], "opus");
}

#[test]
fn opencode_tool_keys_and_schema() {
    let c = Case::new();
    let f = c.fragment(
        "home/.config/opencode/opencode.json",
        "{\"$schema\": \"https://opencode.ai/config.json\", \"mcp\": {\"api\": {\"type\": \"remote\", \"url\": \"http://api/mcp\"}}, \"tools\": {\"api_*\": false, \"api_quote\": true}}\n",
    );
    let t = c.target(
        ".config/opencode/opencode.json",
        "{\n  \"$schema\": \"old\",\n  \"mcp\": {\"api_b\": {\"type\": \"local\"}},\n  \"tools\": {\"api_trade\": true, \"api_b_x\": true, \"write\": false}\n}\n",
    );
    let out = merged_twice(&f, &t, &[]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["$schema"], "https://opencode.ai/config.json");
    assert_eq!(v["tools"], serde_json::json!({"api_b_x": true, "write": false, "api_*": false, "api_quote": true}));
    assert_eq!(v["mcp"]["api_b"]["type"], "local");
}

const HERMES_TARGET: &str = "# hermes config\nmodel: claude # mine\n\nmcp_servers:\n  # my own server\n  mine:\n    command: my-server\n  api:\n    url: http://old\n    tools:\n      include: [a, b, c]\n    headers:\n      X-Extra: \"1\"\n\n# memory below\nmemory:\n  enabled: true\n";

#[test]
fn yaml_comments_and_foreign_servers_survive_and_a_stale_entry_is_replaced_whole() {
    let c = Case::new();
    let f = c.fragment(
        "home/.hermes/config.yaml",
        "mcp_servers:\n  api:\n    url: http://api:8080/mcp\n    tools:\n      include: [a]\n  feeds:\n    url: http://feeds/mcp\n",
    );
    let t = c.target(".hermes/config.yaml", HERMES_TARGET);
    let out = merged_twice(&f, &t, &[]);
    assert_eq!(
        out,
        "# hermes config\nmodel: claude # mine\n\nmcp_servers:\n  # my own server\n  mine:\n    command: my-server\n  api:\n    url: http://api:8080/mcp\n    tools:\n      include:\n        - a\n  feeds:\n    url: http://feeds/mcp\n\n# memory below\nmemory:\n  enabled: true\n"
    );
}

#[test]
fn yaml_flow_parents_are_written_in_block_style() {
    let c = Case::new();
    let f = c.fragment(
        "home/.config/goose/config.yaml",
        "extensions:\n  api:\n    type: streamable_http\n    uri: http://api/mcp\n    enabled: true\n",
    );
    let t = c.target(
        ".config/goose/config.yaml",
        "# goose\nGOOSE_PROVIDER: anthropic\nextensions: {developer: {type: builtin, enabled: true}} # flow\n",
    );
    let run = merge(&f, &t, &["--format", "json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        read(&t),
        "# goose\nGOOSE_PROVIDER: anthropic\nextensions:\n  developer:\n    type: builtin\n    enabled: true\n  api:\n    type: streamable_http\n    uri: http://api/mcp\n    enabled: true\n"
    );
    assert!(run.codes().contains(&"clawc::merge::comments_lost".to_string()), "{}", run.stdout);
    merged_twice(&f, &t, &[]);
}

#[test]
fn a_yaml_layout_that_cannot_be_spliced_is_rewritten_with_a_warning() {
    let c = Case::new();
    let f = c.fragment("home/.hermes/config.yaml", "mcp_servers:\n  api:\n    url: http://api/mcp\n");
    let t = c.target(".hermes/config.yaml", "# one\n{model: x, mcp_servers: {api: {url: old, extra: 1}}} # two\n");
    let run = merge(&f, &t, &["--format", "json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let d = run.assert_error("clawc::merge::comments_lost", "2 comment(s)");
    assert_eq!(d["severity"], "warning");
    assert_eq!(read(&t), "model: x\nmcp_servers:\n  api:\n    url: http://api/mcp\n");
    // An alias into a replaced entry: the splice would break it, so the file is rewritten.
    let t = c.target("alias.yaml", "mcp_servers:\n  api: &a\n    url: old\nbackup: *a\n");
    assert_eq!(merge(&f, &t, &[]).code, 0);
    assert_eq!(read(&t), "mcp_servers:\n  api:\n    url: http://api/mcp\nbackup:\n  url: old\n");
}

#[test]
fn a_missing_target_is_created_with_the_fragments_bytes_and_mode() {
    let c = Case::new();
    let f = c.fragment("home/.codex/config.toml", CODEX_FRAGMENT);
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let t = c.path("user/new/.codex/config.toml");
    let run = merge(&f, &t, &[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(read(&t), CODEX_FRAGMENT);
    assert_eq!(std::fs::metadata(&t).unwrap().permissions().mode() & 0o777, 0o600);
    merged_twice(&f, &t, &[]);
}

#[test]
fn the_target_keeps_its_mode_and_a_private_fragment_makes_it_private() {
    let c = Case::new();
    let f = c.fragment("home/.codex/config.toml", CODEX_FRAGMENT);
    let t = c.target(".codex/config.toml", CODEX_TARGET);
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(merge(&f, &t, &[]).code, 0);
    assert_eq!(std::fs::metadata(&t).unwrap().permissions().mode() & 0o777, 0o640);
    let t2 = c.target("two/config.toml", CODEX_TARGET);
    std::fs::set_permissions(&t2, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(merge(&f, &t2, &["--runner", "codex"]).code, 0);
    assert_eq!(std::fs::metadata(&t2).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn check_exits_1_with_a_redacted_diff_and_writes_nothing() {
    let c = Case::new();
    let f = c.fragment("home/.claude.json", "{\"mcpServers\": {\"api\": {\"type\": \"http\", \"url\": \"http://api/mcp\", \"headers\": {\"Authorization\": \"Bearer ${API_TOKEN}\"}}}}\n");
    let t = c.target(".claude.json", "{\n  \"mcpServers\": {\n    \"api\": {\"type\": \"http\", \"url\": \"http://old\", \"headers\": {\"Authorization\": \"Bearer sk-live-0123456789\"}},\n    \"mine\": {\"env\": {\"MY_KEY\": \"hunter2-hunter2\"}}\n  }\n}\n");
    let before = read(&t);
    let run = merge(&f, &t, &["--check"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let shown = t.display().to_string();
    assert!(run.stdout.starts_with(&format!("--- {shown}\n+++ {shown}\n@@")), "{}", run.stdout);
    assert!(run.stdout.contains("\n+      \"url\": \"http://api/mcp\",\n"), "{}", run.stdout);
    assert!(run.stdout.contains("${redacted}") && run.stdout.contains("Bearer ${API_TOKEN}"), "{}", run.stdout);
    assert!(!run.stdout.contains("sk-live") && !run.stderr.contains("sk-live") && !run.stdout.contains("hunter2"), "{}", run.stdout);
    assert!(run.stderr.contains("clawc::merge::would_change"), "{}", run.stderr);
    assert_eq!(read(&t), before);
    let json = merge(&f, &t, &["--check", "--format", "json"]);
    assert_eq!(json.code, 1);
    json.assert_error("clawc::merge::would_change", "would change");
    let summary: serde_json::Value = serde_json::from_str(json.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["status"], "would-change");
    assert!(!summary["summary"]["diff"].as_str().unwrap().contains("sk-live"));
    assert_eq!(merge(&f, &t, &[]).code, 0);
    let ok = merge(&f, &t, &["--check"]);
    assert_eq!(ok.code, 0, "{}{}", ok.stdout, ok.stderr);
    // A missing target would be created: a change too.
    assert_eq!(merge(&f, &c.path("user/none.json"), &["--check", "--runner", "claude-code"]).code, 1);
    assert!(!c.path("user/none.json").exists());
}

#[test]
fn stdout_prints_the_merge_and_writes_nothing() {
    let c = Case::new();
    let f = c.fragment("home/.codex/config.toml", CODEX_FRAGMENT);
    let t = c.target(".codex/config.toml", CODEX_TARGET);
    let run = merge(&f, &t, &["--stdout"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(read(&t), CODEX_TARGET);
    assert!(run.stdout.contains("enabled_tools = [\"a\"]") && run.stdout.starts_with("# my codex config"), "{}", run.stdout);
}

#[test]
fn invalid_targets_are_refused() {
    let c = Case::new();
    let toml = c.fragment("home/.codex/config.toml", CODEX_FRAGMENT);
    let json = c.fragment("home/.claude.json", "{\"mcpServers\": {\"api\": {\"url\": \"u\"}}}\n");
    let yaml = c.fragment("home/.hermes/config.yaml", "mcp_servers:\n  api:\n    url: u\n");
    let t = c.target("bad.toml", "[mcp_servers.api\nurl = 'x'\n");
    refused(&toml, &t, &["--runner", "codex"], "clawc::merge::invalid_file", 2);
    let t = c.target("bad.json", "{\"mcpServers\": {\"api\": 1,}\n");
    refused(&json, &t, &[], "clawc::merge::invalid_file", 2);
    let t = c.target("single.json", "{'mcpServers': {}}\n");
    refused(&json, &t, &[], "clawc::merge::invalid_file", 2);
    let t = c.target("dup.json", "{\"mcpServers\": {}, \"mcpServers\": {\"api\": {\"url\": \"wide\"}}}\n");
    refused(&json, &t, &[], "clawc::merge::invalid_file", 2);
    let t = c.target("bad.yaml", "mcp_servers:\n  api: [\n");
    refused(&yaml, &t, &[], "clawc::merge::invalid_file", 2);
    let t = c.target("list.json", "{\"mcpServers\": []}\n");
    refused(&json, &t, &[], "clawc::merge::type_conflict", 2);
    let t = c.target("binary.json", "\u{0}\u{0}");
    std::fs::write(&t, [0xff, 0xfe, 0x00]).unwrap();
    refused(&json, &t, &[], "clawc::merge::invalid_file", 2);
}

#[test]
fn a_fragment_path_must_name_a_runner_file() {
    let c = Case::new();
    let f = c.write("frag.json", "{\"mcpServers\": {}}\n");
    let t = c.target("x.json", "{}\n");
    let run = refused(&f, &t, &[], "clawc::merge::unknown_file", 2);
    assert!(run.stdout.contains(".codex/config.toml") && run.stdout.contains("--runner"), "{}", run.stdout);
    refused(&f, &t, &["--runner", "claud-code"], "clawc::merge::unknown_runner", 2);
    let ambiguous = c.write("x/.claude/settings.json", "{}\n");
    refused(&ambiguous, &t, &[], "clawc::merge::unknown_file", 2);
    let typo = c.write("out/runners/a/home/.codex/config.tml", "");
    let run = refused(&typo, &t, &[], "clawc::merge::unknown_file", 2);
    assert!(run.stdout.contains("did you mean"), "{}", run.stdout);
    refused(&c.path("out/runners/a/home/.codex/config.toml"), &t, &[], "clawc::merge::missing_fragment", 2);
    // With --runner, any fragment name does.
    let run = merge(&f, &t, &["--runner", "cursor"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn oversize_and_deep_files_are_refused_without_a_crash() {
    let c = Case::new();
    let json = c.fragment("home/.claude.json", "{\"mcpServers\": {}}\n");
    let big = c.target("big.json", "");
    std::fs::write(&big, vec![b' '; 8 * 1024 * 1024 + 1]).unwrap();
    refused(&json, &big, &[], "clawc::merge::too_large", 2);
    let deep = c.target("deep.json", &format!("{{\"a\": {}}}", "[".repeat(100_000)));
    refused(&json, &deep, &[], "clawc::merge::too_deep", 2);
    let deep_fragment =
        c.fragment("home/.cursor/mcp.json", &format!("{{\"mcpServers\": {}{}}}", "{\"a\":".repeat(100_000), "}".repeat(100_000)));
    refused(&deep_fragment, &c.target("ok.json", "{}"), &[], "clawc::merge::too_deep", 2);
    let yaml = c.fragment("home/.hermes/config.yaml", "mcp_servers: {}\n");
    let deep = c.target("deep.yaml", &format!("a: {}", "[".repeat(100_000)));
    refused(&yaml, &deep, &[], "clawc::merge::too_deep", 2);
    let toml = c.fragment("home/.codex/config.toml", CODEX_FRAGMENT);
    let deep = c.target("deep.toml", &format!("a = {}", "[".repeat(100_000)));
    let run = merge(&toml, &deep, &["--format", "json", "--runner", "codex"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.codes().iter().any(|c| c == "clawc::merge::too_deep" || c == "clawc::merge::invalid_file"), "{}", run.stdout);
}

#[test]
fn wide_files_are_bounded_and_merge_quickly() {
    let c = Case::new();
    let servers = |n: usize, url: &str| (0..n).map(|i| format!("\"s{i}\": {{\"url\": \"{url}\"}}")).collect::<Vec<_>>().join(",\n    ");
    let f = c.fragment("home/.cursor/mcp.json", &format!("{{\"mcpServers\": {{\n    {}\n}}}}\n", servers(1_000, "new")));
    let t = c.target("wide.json", &format!("{{\"mcpServers\": {{\n    {}\n}}}}\n", servers(10_000, "old")));
    let start = std::time::Instant::now();
    let out = merged_twice(&f, &t, &[]);
    assert!(start.elapsed() < std::time::Duration::from_secs(60), "{:?}", start.elapsed());
    assert_eq!(out.matches("\"new\"").count(), 1_000);
    let too_wide = c.target("too-wide.json", &format!("{{\"x\": [{}]}}", vec!["1"; 10_001].join(",")));
    refused(&f, &too_wide, &[], "clawc::merge::too_large", 2);
    let many = c.fragment("home/.cursor/mcp.json", &format!("{{\"mcpServers\": {{\n    {}\n}}}}\n", servers(1_001, "new")));
    refused(&many, &c.target("few.json", "{}\n"), &[], "clawc::merge::too_large", 2);
}

#[test]
fn symlinks_fifos_and_directories_are_refused() {
    let c = Case::new();
    let f = c.fragment("home/.codex/config.toml", CODEX_FRAGMENT);
    let real = c.target("real.toml", "model = \"x\"\n");
    let link = c.path("user/link.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let run = refused(&f, &link, &[], "clawc::merge::not_a_file", 2);
    assert!(run.stdout.contains("symlink"), "{}", run.stdout);
    assert_eq!(read(&real), "model = \"x\"\n");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let fifo = c.path("user/fifo.toml");
    let cpath = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    refused(&f, &fifo, &[], "clawc::merge::not_a_file", 2);
    std::fs::create_dir_all(c.path("user/dir.toml")).unwrap();
    refused(&f, &c.path("user/dir.toml"), &[], "clawc::merge::not_a_file", 2);
    let flink = c.path("out/runners/b/home/.codex/config.toml");
    std::fs::create_dir_all(flink.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&f, &flink).unwrap();
    refused(&flink, &real, &[], "clawc::merge::not_a_file", 2);
    // A directory of the compiled tree that is a symlink is never followed either.
    let elsewhere = c.write("elsewhere/home/.codex/config.toml", CODEX_FRAGMENT);
    std::os::unix::fs::symlink(elsewhere.parent().unwrap().parent().unwrap().parent().unwrap(), c.path("out/runners/c")).unwrap();
    let run = refused(&c.path("out/runners/c/home/.codex/config.toml"), &real, &[], "clawc::merge::not_a_file", 2);
    assert!(run.stdout.contains("runners/c"), "{}", run.stdout);
}

#[test]
fn merge_doc_is_current() {
    super::harness::assert_generated_doc(
        "docs/merge.md",
        &clawc::merge::rules::markdown(),
        "UPDATE_GOLDEN=1 cargo test --test it merge_doc",
    );
}

/// Every file the native golden case compiles merges into a user's file holding foreign
/// keys and list items, and a second merge changes no byte (list items the fragment has
/// that belong to no server, such as Claude's resource tools, included).
#[test]
fn every_compiled_runner_file_merges_idempotently_into_a_users_file() {
    let runners = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/native-runners/expected/out/runners");
    let dir = tempfile::tempdir().unwrap();
    let mut merged = 0;
    for (rel, _) in super::harness::tree(&runners) {
        if rel.ends_with("runner.json") {
            continue;
        }
        let fragment = runners.join(&rel);
        let target = dir.path().join(rel.replace('/', "_"));
        let foreign = if rel.ends_with(".toml") {
            "# mine\nforeign = 1\n"
        } else if rel.ends_with(".yaml") {
            "# mine\nforeign: 1\n"
        } else {
            "{\"foreign\": 1, \"permissions\": {\"deny\": [\"WebFetch\", \"ListMcpResourcesTool\"]}}"
        };
        std::fs::write(&target, foreign).unwrap();
        let out = merged_twice(&fragment, &target, &[]);
        assert!(out.contains("foreign"), "{rel}: the user's key was lost:\n{out}");
        merged += 1;
    }
    assert_eq!(merged, 18, "every runner file of the 14 runners");
}
