//! `clawc compat OLD NEW`: the real binary on descriptors, snapshots, git revisions and
//! pods; every output format read back (JSON against its schema, JUnit parsed, SARIF's
//! required structure checked); exit codes; the accept file.

use super::harness::{Run, clawc};
use serde_json::{Value, json};
use std::path::Path;

fn run(dir: &Path, args: &[&str]) -> Run {
    let o = clawc().current_dir(dir).arg("compat").args(args).output().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat").join(name)).unwrap()
}

/// A directory with the trading-api releases (tests/compat/old.json, new.json) and a pod.
fn trading() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in ["old.json", "new.json", "claw-pod.yml"] {
        write(dir.path(), f, &fixture(f));
    }
    dir
}

fn json_out(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", r.stdout, r.stderr))
}

fn rules_of(doc: &Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rule"].as_str().unwrap().to_string(), f["tool"].as_str().unwrap_or("").to_string()))
        .collect()
}

fn finding<'a>(doc: &'a Value, rule: &str, tool: &str) -> &'a Value {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule && f["tool"].as_str().unwrap_or("") == tool)
        .unwrap_or_else(|| panic!("no {rule} on {tool:?} in {:#}", doc["findings"]))
}

#[test]
fn compat_finds_breaking_changes_and_exits_1() {
    let dir = trading();
    let r = run(dir.path(), &["old.json", "new.json", "--format", "json"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let doc = json_out(&r);
    let v = super::schemas::validator("compat.schema.json");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let got = rules_of(&doc);
    for (rule, tool) in [
        ("TOOL_REMOVED", "legacy_quote"),
        ("INPUT_REQUIRED_ADDED", "execute_trade"),
        ("INPUT_CONSTRAINT_TIGHTENED", "execute_trade"),
        ("OUTPUT_TYPE_WIDENED", "get_quote"),
        ("PRIVILEGE_READONLY_HINT_CLEARED", "get_positions"),
        ("TOOL_ADDED", "cancel_order"),
        ("FEED_PATH_CHANGED", ""),
        ("VERSION_NOT_BUMPED", ""),
    ] {
        assert!(got.contains(&(rule.to_string(), tool.to_string())), "{rule} {tool}: {got:?}");
    }
    let tightened = finding(&doc, "INPUT_CONSTRAINT_TIGHTENED", "execute_trade");
    assert_eq!(tightened["path"], "/inputSchema/properties/quantity/maximum");
    assert_eq!(tightened["keyword"], "maximum");
    assert_eq!(tightened["file"], "new.json");
    // The line of `"maximum"` in new.json.
    let line = fixture("new.json").lines().position(|l| l.contains("\"maximum\": 500")).unwrap() + 1;
    assert_eq!(tightened["line"], line);
    // Without --pod no agent is named and the pod rules cannot fire.
    assert!(doc["findings"].as_array().unwrap().iter().all(|f| f["agents"] == json!([])));
    assert!(!got.iter().any(|(r, _)| r.starts_with("PRIVILEGE_ALL_GRANT") || r == "TOOL_GRANT_DANGLING"));
    // Deterministic: the same bytes on a second run.
    assert_eq!(run(dir.path(), &["old.json", "new.json", "--format", "json"]).stdout, r.stdout);
}

#[test]
fn no_change_is_exit_0_and_fail_on_is_honoured() {
    let dir = trading();
    let r = run(dir.path(), &["old.json", "old.json"]);
    assert_eq!((r.code, r.stdout.contains("PASS: 0 ERR, 0 WARN, 0 INFO")), (0, true), "{}", r.stdout);
    // Tool, feed and key order, spelling-only edits: no finding.
    let mut v: Value = serde_json::from_str(&fixture("old.json")).unwrap();
    v["tools"].as_array_mut().unwrap().reverse();
    v["tools"][0]["http"]["method"] = json!(v["tools"][0]["http"]["method"].as_str().unwrap().to_lowercase());
    write(dir.path(), "shuffled.json", &serde_json::to_string(&v).unwrap());
    let r = run(dir.path(), &["old.json", "shuffled.json", "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(json_out(&r)["findings"], json!([]));
    // Only compatible changes (a feed's ttl: INFO) pass by default, fail with --fail-on info.
    let mut v: Value = serde_json::from_str(&fixture("old.json")).unwrap();
    v["feeds"][0]["ttl"] = json!(120);
    write(dir.path(), "ttl.json", &serde_json::to_string_pretty(&v).unwrap());
    assert_eq!(run(dir.path(), &["old.json", "ttl.json"]).code, 0);
    assert_eq!(run(dir.path(), &["old.json", "ttl.json", "--fail-on", "warn"]).code, 0);
    assert_eq!(run(dir.path(), &["old.json", "ttl.json", "--fail-on", "info"]).code, 1);
}

#[test]
fn a_side_that_does_not_load_is_exit_2_never_a_clean_result() {
    let dir = trading();
    write(dir.path(), "broken.json", "{\"version\": 2,\n \"tools\": [}\n");
    for args in [["old.json", "broken.json"], ["broken.json", "old.json"]] {
        let mut a = args.to_vec();
        a.extend(["--format", "json"]);
        let r = run(dir.path(), &a);
        assert_eq!(r.code, 2, "{}", r.stdout);
        let d = r.assert_error("clawc::describe::invalid_json", "invalid descriptor JSON");
        assert_eq!((d["file"].as_str(), d["line"].as_u64()), (Some("broken.json"), Some(2)));
    }
    // What compile rejects, compat rejects: an external $ref, a missing file, a directory without a descriptor.
    let mut v: Value = serde_json::from_str(&fixture("new.json")).unwrap();
    v["tools"][0]["inputSchema"]["properties"]["symbol"] = json!({"$ref": "https://example.com/s.json"});
    write(dir.path(), "external.json", &serde_json::to_string_pretty(&v).unwrap());
    let r = run(dir.path(), &["old.json", "external.json", "--format", "json"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::describe::input_schema", "not a valid JSON Schema");
    let r = run(dir.path(), &["old.json", "missing.json", "--format", "json"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::source::missing_file", "missing.json");
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let r = run(dir.path(), &["old.json", "empty", "--format", "json"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::compat::no_descriptor", "has no descriptor");
    // An image side with no image source (the harness reads none).
    let r = run(dir.path(), &["old.json", "image:trading-api:1.5", "--format", "json"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::image::bad_source", "--images none");
    let r = run(dir.path(), &["old.json", "image:", "--format", "json"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::compat::bad_source", "image:");
    // Human format: the diagnostic on stderr, nothing on stdout.
    let r = run(dir.path(), &["old.json", "broken.json"]);
    assert_eq!((r.code, r.stdout.as_str()), (2, ""));
    assert!(r.stderr.contains("clawc::describe::invalid_json"), "{}", r.stderr);
}

#[test]
fn snapshots_keep_output_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let tool = |out: Value| json!({"tools": [{"name": "search", "description": "Search", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}, "outputSchema": out, "annotations": {"readOnlyHint": true}}]});
    write(
        dir.path(),
        "old/.claw-tools.json",
        &tool(json!({"type": "object", "properties": {"hits": {"type": "integer"}}, "required": ["hits"]})).to_string(),
    );
    write(dir.path(), "new/.claw-tools.json", &tool(json!({"type": "object", "properties": {"hits": {"type": "integer"}}})).to_string());
    let r = run(dir.path(), &["old/.claw-tools.json", "new/.claw-tools.json", "--format", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let doc = json_out(&r);
    assert_eq!(rules_of(&doc), [("OUTPUT_REQUIRED_REMOVED".to_string(), "search".to_string())]);
    assert_eq!(doc["findings"][0]["file"], "new/.claw-tools.json");
}

fn git(dir: &Path, args: &[&str]) {
    let o = std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn git_revisions_are_sources() {
    let dir = trading();
    write(dir.path(), "svc/api.json", &fixture("old.json"));
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "svc/api.json"]);
    git(dir.path(), &["commit", "-qm", "v1"]);
    write(dir.path(), "svc/api.json", &fixture("new.json"));
    let r = run(dir.path(), &["git:HEAD:svc/api.json", "svc/api.json", "--format", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let doc = json_out(&r);
    assert_eq!(doc["old"], "git:HEAD:svc/api.json");
    // The temporary copy is removed (TMPDIR private to this run).
    let tmp = tempfile::tempdir().unwrap();
    let o = clawc()
        .current_dir(dir.path())
        .env("TMPDIR", tmp.path())
        .args(["compat", "git:HEAD:svc/api.json", "svc/api.json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "the git copy is cleaned up");
    assert!(rules_of(&doc).contains(&("TOOL_REMOVED".into(), "legacy_quote".into())));
    // The same file at the same revision: no finding; from a subdirectory too.
    let sub = dir.path().join("svc");
    assert_eq!(run(&sub, &["git:HEAD:svc/api.json", "git:HEAD:svc/api.json"]).code, 0);
    // A broken file at a revision is named as git:REV:PATH.
    write(dir.path(), "svc/api.json", "{\"version\": 2,\n  \"tools\": 3}\n");
    git(dir.path(), &["commit", "-qam", "broken"]);
    let r = run(dir.path(), &["git:HEAD:svc/api.json", "new.json", "--format", "json"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    let d = r.assert_error("clawc::describe::wrong_type", "tools");
    assert_eq!(d["file"], "git:HEAD:svc/api.json");
    assert!(!r.stdout.contains("clawc-compat-"), "no temporary path is shown: {}", r.stdout);
    // Bad revisions and paths are input errors; option-like text never reaches git as an option.
    let r = run(dir.path(), &["git:nope:svc/api.json", "new.json", "--format", "json"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::compat::git_object", "no revision");
    let r = run(dir.path(), &["git:HEAD:svc/nope.json", "new.json", "--format", "json"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::compat::git_object", "no file");
    let r = run(dir.path(), &["git:HEAD:svc", "new.json", "--format", "json"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::compat::git_object", "not a file");
    for bad in ["git:--output=pwned:svc/api.json", "git:HEAD:../x.json", "git:HEAD:/etc/passwd"] {
        let r = run(dir.path(), &[bad, "new.json", "--format", "json"]);
        assert_eq!(r.code, 2, "{bad}");
        r.assert_error("clawc::compat::bad_source", "");
    }
    assert!(!dir.path().join("pwned").exists());
}

#[test]
fn pods_name_agents_dangling_grants_and_all_grants() {
    let dir = trading();
    let r = run(dir.path(), &["old.json", "new.json", "--pod", "claw-pod.yml", "--format", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let doc = json_out(&r);
    assert_eq!(doc["service"], "trading-api");
    // Named and `allow: all` holders of the removed tool; the replicas by id.
    assert_eq!(finding(&doc, "TOOL_REMOVED", "legacy_quote")["agents"], json!(["analyst", "trader-0", "trader-1"]));
    let dangling = finding(&doc, "TOOL_GRANT_DANGLING", "legacy_quote");
    assert_eq!(dangling["agents"], json!(["analyst"]));
    assert_eq!(dangling["file"], "claw-pod.yml");
    let line = fixture("claw-pod.yml").lines().position(|l| l.contains("legacy_quote")).unwrap() + 1;
    assert_eq!(dangling["line"], line);
    assert!(dangling["message"].as_str().unwrap().contains(&format!("claw-pod.yml:{line}")));
    // The new tool reaches the `allow: all` agents only.
    let gain = finding(&doc, "PRIVILEGE_ALL_GRANT_GAINS_WRITE_TOOL", "cancel_order");
    assert_eq!(gain["agents"], json!(["trader-0", "trader-1"]));
    assert_eq!(gain["severity"], "ERR");
    assert_eq!(finding(&doc, "TOOL_ADDED", "cancel_order")["agents"], json!(["trader-0", "trader-1"]));
    // Feeds: subscribers by name; auth: everyone with a grant, feed or memory on the service.
    assert_eq!(finding(&doc, "FEED_PATH_CHANGED", "")["agents"], json!(["analyst", "watcher"]));
    // `tools: []` gets nothing.
    assert!(doc["findings"].as_array().unwrap().iter().all(|f| !f["agents"].as_array().unwrap().contains(&json!("idle"))));
    // The service is found by describe-file; with two pods, agents are qualified.
    write(dir.path(), "two/claw-pod.yml", &fixture("claw-pod.yml").replace("./new.json", "../new.json"));
    let r = run(dir.path(), &["old.json", "new.json", "--pod", "claw-pod.yml", "--pod", "two/claw-pod.yml", "--format", "json"]);
    let doc = json_out(&r);
    assert_eq!(finding(&doc, "TOOL_GRANT_DANGLING", "legacy_quote")["agents"], json!(["claw-pod.yml:analyst", "two/claw-pod.yml:analyst"]));
    // No service with OLD or NEW as its source: exit 2 with a hint, unless --service.
    write(dir.path(), "other.yml", &fixture("claw-pod.yml").replace("describe-file: ./new.json", "describe-file: ./elsewhere.json"));
    let r = run(dir.path(), &["old.json", "new.json", "--pod", "other.yml", "--format", "json"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    r.assert_error("clawc::compat::service", "no service");
    let r = run(dir.path(), &["old.json", "new.json", "--pod", "other.yml", "--service", "trading-api", "--format", "json"]);
    assert_eq!(r.code, 1);
    let r = run(dir.path(), &["old.json", "new.json", "--pod", "other.yml", "--service", "tradng-api", "--format", "json"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::compat::service", "tradng-api");
    // A pod that does not parse is exit 2 with its own diagnostics.
    write(dir.path(), "bad.yml", "services: [\n");
    let r = run(dir.path(), &["old.json", "new.json", "--pod", "bad.yml", "--format", "json"]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::parse::yaml_syntax", "");
}

#[test]
fn accept_files_accept_and_warn_when_stale() {
    let dir = trading();
    let doc = json_out(&run(dir.path(), &["old.json", "new.json", "--format", "json"]));
    let errs: Vec<&Value> = doc["findings"].as_array().unwrap().iter().filter(|f| f["severity"] == "ERR").collect();
    let mut yaml = String::new();
    for (i, f) in errs.iter().enumerate() {
        if i % 2 == 0 {
            yaml.push_str(&format!("- fingerprint: {}\n  reason: reviewed in PLAT-{i}\n", f["fingerprint"].as_str().unwrap()));
        } else {
            yaml.push_str(&format!(
                "- rule: {}\n  tool: {}\n  reason: reviewed\n",
                f["rule"].as_str().unwrap(),
                f["tool"].as_str().unwrap_or("null")
            ));
        }
    }
    write(dir.path(), "accept.yml", &yaml);
    let r = run(dir.path(), &["old.json", "new.json", "--accept", "accept.yml", "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let doc = json_out(&r);
    assert_eq!(doc["summary"]["ERR"], 0);
    assert_eq!(doc["summary"]["accepted"], errs.len());
    assert_eq!(finding(&doc, "TOOL_REMOVED", "legacy_quote")["accepted"].as_str().map(|s| s.starts_with("reviewed")), Some(true));
    // A stale entry: a warning with its line, a WARN for --fail-on.
    write(dir.path(), "accept.yml", &format!("{yaml}- rule: TOOL_REMOVED\n  tool: never_existed\n  reason: old\n"));
    let r = run(dir.path(), &["old.json", "new.json", "--accept", "accept.yml", "--format", "json"]);
    assert_eq!(r.code, 0);
    let doc = json_out(&r);
    assert_eq!(doc["summary"]["stale_accepts"], 1);
    let w = &doc["diagnostics"].as_array().unwrap().iter().find(|d| d["code"] == "clawc::compat::stale_accept").unwrap().clone();
    assert_eq!((w["file"].as_str(), w["line"].as_u64()), (Some("accept.yml"), Some(yaml.lines().count() as u64 + 1)));
    assert_eq!(run(dir.path(), &["old.json", "new.json", "--accept", "accept.yml", "--fail-on", "warn"]).code, 1);
    // Bad accept files are exit 2.
    for (text, part) in [
        ("- fingerprint: abc\n", "`reason` is required"),
        ("- rule: TOOL_REMOVD\n  tool: x\n  reason: r\n", "is not a rule"),
        ("- rule: TOOL_REMOVED\n  reason: r\n", "needs `tool`"),
        ("- fingerprnt: abc\n  reason: r\n", "unknown key"),
        ("{a: 1}\n", "must be a YAML list"),
    ] {
        write(dir.path(), "bad.yml", text);
        let r = run(dir.path(), &["old.json", "new.json", "--accept", "bad.yml", "--format", "json"]);
        assert_eq!(r.code, 2, "{text}");
        r.assert_error("clawc::compat::accept_file", part);
    }
}

#[test]
fn text_markdown_and_github_outputs() {
    let dir = trading();
    let r = run(dir.path(), &["old.json", "new.json", "--pod", "claw-pod.yml"]);
    assert_eq!(r.code, 1);
    assert!(!r.stdout.contains('\u{1b}'), "no colour off a terminal");
    let err = r.stdout.find("\nERR (").unwrap();
    let warn = r.stdout.find("\nWARN (").unwrap();
    let info = r.stdout.find("\nINFO (").unwrap();
    assert!(err < warn && warn < info, "{}", r.stdout);
    assert!(r.stdout.contains("agents: analyst, trader-0, trader-1"), "{}", r.stdout);
    assert!(r.stdout.contains("/inputSchema/properties/quantity/maximum"));
    let md = run(dir.path(), &["old.json", "new.json", "--format", "markdown"]).stdout;
    assert!(md.contains("| Severity | Rule | Tool | Path | Finding | Agents |"), "{md}");
    assert!(md.contains("| ERR | `TOOL_REMOVED` | `legacy_quote` |"), "{md}");
    assert!(md.contains("FAIL:"));
    let gh = run(dir.path(), &["old.json", "new.json", "--format", "github"]).stdout;
    let line = fixture("new.json").lines().position(|l| l.contains("\"maximum\": 500")).unwrap() + 1;
    assert!(gh.contains(&format!("::error file=new.json,line={line},title=INPUT_CONSTRAINT_TIGHTENED::`execute_trade`: ")), "{gh}");
    assert!(gh.lines().all(|l| l.starts_with("::error ") || l.starts_with("::warning ") || l.starts_with("::notice ")), "{gh}");
}

/// A small XML reader for the JUnit output: elements with attributes, nested.
fn xml_elements(text: &str) -> Vec<(String, std::collections::BTreeMap<String, String>, usize)> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut rest = text;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let end = rest.find('>').expect("a tag ends");
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with('?') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            depth -= 1;
            assert!(!name.is_empty());
            continue;
        }
        let self_closing = tag.ends_with('/');
        let tag = tag.trim_end_matches('/');
        let (name, mut attrs_text) = tag.split_once(' ').unwrap_or((tag, ""));
        let mut attrs = std::collections::BTreeMap::new();
        while let Some(eq) = attrs_text.find("=\"") {
            let key = attrs_text[..eq].trim().to_string();
            let after = &attrs_text[eq + 2..];
            let close = after.find('"').expect("an attribute ends");
            assert!(!after[..close].contains('<'), "attribute values are escaped");
            attrs.insert(key, after[..close].to_string());
            attrs_text = &after[close + 1..];
        }
        out.push((name.to_string(), attrs, depth));
        if !self_closing {
            depth += 1;
        }
    }
    assert_eq!(depth, 0, "every element is closed");
    out
}

#[test]
fn junit_parses_back() {
    let dir = trading();
    let r = run(dir.path(), &["old.json", "new.json", "--format", "junit"]);
    assert_eq!(r.code, 1);
    let els = xml_elements(&r.stdout);
    assert_eq!(els[0].0, "testsuites");
    let cases: Vec<_> = els.iter().filter(|e| e.0 == "testcase").collect();
    assert_eq!(cases.len(), 78, "one test case per rule");
    let failures = els.iter().filter(|e| e.0 == "failure").count();
    let doc = json_out(&run(dir.path(), &["old.json", "new.json", "--format", "json"]));
    assert_eq!(failures, doc["summary"]["ERR"].as_u64().unwrap() as usize);
    assert_eq!(els[1].1["failures"], failures.to_string());
    assert!(els.iter().any(|e| e.0 == "testcase" && e.1["name"] == "TOOL_REMOVED"));
    // --fail-on info: every finding is a failure.
    let r = run(dir.path(), &["old.json", "new.json", "--format", "junit", "--fail-on", "info"]);
    let failures = xml_elements(&r.stdout).iter().filter(|e| e.0 == "failure").count();
    assert_eq!(failures, doc["findings"].as_array().unwrap().len());
}

/// SARIF 2.1.0. The official schema (sarif-schema-2.1.0.json) is not available offline
/// here, so the properties it requires of what clawc writes are checked by hand: `version`
/// and `runs`; each run's `tool.driver.name`; each result's `message.text`; rule indexes
/// that point at the rule with the result's `ruleId`; levels from the schema's enum;
/// 1-based regions; suppressions with a `kind` from the enum.
#[test]
fn sarif_has_the_required_structure() {
    let dir = trading();
    write(dir.path(), "accept.yml", "- rule: TOOL_REMOVED\n  tool: legacy_quote\n  reason: migrated\n");
    let r = run(dir.path(), &["old.json", "new.json", "--format", "sarif", "--accept", "accept.yml"]);
    assert_eq!(r.code, 1);
    let s = json_out(&r);
    assert_eq!(s["version"], "2.1.0");
    assert!(s["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let runs = s["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert!(driver["name"].is_string());
    let rules = driver["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 78);
    for rule in rules {
        assert!(rule["id"].is_string() && rule["shortDescription"]["text"].is_string());
        assert!(["error", "warning", "note"].contains(&rule["defaultConfiguration"]["level"].as_str().unwrap()));
    }
    let results = runs[0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    let mut suppressed = 0;
    for res in results {
        assert!(res["message"]["text"].as_str().is_some_and(|t| !t.is_empty()));
        assert!(["none", "note", "warning", "error"].contains(&res["level"].as_str().unwrap()));
        let i = res["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[i]["id"], res["ruleId"]);
        let loc = &res["locations"][0]["physicalLocation"];
        assert!(loc["artifactLocation"]["uri"].is_string());
        assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1);
        assert!(res["partialFingerprints"]["clawcCompat/v1"].is_string());
        if let Some(sup) = res.get("suppressions") {
            assert!(["inSource", "external"].contains(&sup[0]["kind"].as_str().unwrap()));
            suppressed += 1;
        }
    }
    assert_eq!(suppressed, 1);
}

#[test]
fn list_rules_comes_from_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(dir.path(), &["--list-rules"]);
    assert_eq!((r.code, r.stdout.lines().count()), (0, 78), "{}", r.stdout);
    let j = json_out(&run(dir.path(), &["--list-rules", "--format", "json"]));
    assert_eq!(j["rules"].as_array().unwrap().len(), 78);
    assert_eq!(
        j["rules"][0],
        json!({"id": "TOOL_REMOVED", "category": "TOOL", "severity": "ERR", "direction": "call", "meaning": "A tool of OLD is not in NEW (and is not paired as a rename)."})
    );
    let md = run(dir.path(), &["--list-rules", "--format", "markdown"]).stdout;
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/compat-rules.md")).unwrap();
    assert_eq!(md, doc);
    assert_eq!(run(dir.path(), &["--list-rules", "--format", "junit"]).code, 2);
    // OLD and NEW are required otherwise.
    assert_eq!(run(dir.path(), &["only-one.json"]).code, 2);
}

#[test]
fn hostile_descriptors_do_not_reach_the_terminal_or_break_formats() {
    let dir = trading();
    let mut v: Value = serde_json::from_str(&fixture("old.json")).unwrap();
    let evil = "evil\u{1b}]0;pwned\u{7}<x>|`%0A\n::error::";
    v["tools"][0]["name"] = json!(evil);
    write(dir.path(), "evil.json", &serde_json::to_string(&v).unwrap());
    for format in ["text", "markdown", "github", "junit"] {
        let r = run(dir.path(), &["old.json", "evil.json", "--format", format]);
        assert_eq!(r.code, 1, "{format}");
        assert!(!r.stdout.contains('\u{1b}') && !r.stdout.contains('\u{7}'), "{format}: {}", r.stdout);
        if format == "github" {
            assert!(r.stdout.lines().all(|l| l.starts_with("::")), "{}", r.stdout);
        }
        if format == "junit" {
            let _ = xml_elements(&r.stdout);
        }
    }
    // Deep nesting behind $refs (the JSON itself is shallow): bounded, reported, never silent.
    let chain = |leaf: &str| {
        let mut defs = serde_json::Map::new();
        for i in 0..40 {
            defs.insert(format!("d{i}"), json!({"type": "object", "properties": {"a": {"$ref": format!("#/$defs/d{}", i + 1)}}}));
        }
        defs.insert("d40".into(), json!({ "type": leaf }));
        json!({"type": "object", "properties": {"deep": {"$ref": "#/$defs/d0"}}, "$defs": defs})
    };
    let mut v: Value = serde_json::from_str(&fixture("old.json")).unwrap();
    v["tools"][0]["inputSchema"] = chain("string");
    write(dir.path(), "deep-old.json", &serde_json::to_string(&v).unwrap());
    v["tools"][0]["inputSchema"] = chain("integer");
    write(dir.path(), "deep-new.json", &serde_json::to_string(&v).unwrap());
    let r = run(dir.path(), &["deep-old.json", "deep-new.json", "--format", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let doc = json_out(&r);
    assert!(rules_of(&doc).iter().any(|(r, _)| r == "INPUT_UNCLASSIFIED"));
    assert!(doc["diagnostics"].as_array().unwrap().iter().any(|d| d["code"] == "clawc::compat::too_complex"));
}

/// The agents compat names are the agents `who-can` names, tool by tool (under OLD).
#[test]
fn agents_are_who_can_holders() {
    let dir = trading();
    let doc = json_out(&run(dir.path(), &["old.json", "new.json", "--pod", "claw-pod.yml", "--format", "json"]));
    let old: Value = serde_json::from_str(&fixture("old.json")).unwrap();
    let mut checked = 0;
    for t in old["tools"].as_array().unwrap() {
        let tool = t["name"].as_str().unwrap();
        let o = clawc()
            .current_dir(dir.path())
            .args(["who-can", "claw-pod.yml", &format!("trading-api.{tool}"), "--descriptor", "trading-api=old.json", "--format", "json"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        let who: Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut holders: Vec<&str> = who["holders"].as_array().unwrap().iter().map(|h| h["agent"].as_str().unwrap()).collect();
        holders.sort_unstable();
        holders.dedup();
        for f in doc["findings"].as_array().unwrap().iter().filter(|f| f["tool"] == tool && f["rule"] != "TOOL_GRANT_DANGLING") {
            let agents: Vec<&str> = f["agents"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
            assert_eq!(agents, holders, "{} on {tool}", f["rule"]);
            checked += 1;
        }
    }
    assert!(checked >= 5, "{checked}");
}

/// Images as OLD and NEW: a `.claw-tools.json` baked in an image keeps its output schemas,
/// and an image's release is its `org.opencontainers.image.version` label (the snapshot
/// has none).
#[test]
fn images_give_snapshots_as_written_and_releases_from_labels() {
    let dir = tempfile::tempdir().unwrap();
    let tool = |out: Value| {
        json!({"tools": [{"name": "search", "description": "Search", "inputSchema": {"type": "object"}, "outputSchema": out}]}).to_string()
    };
    let (old, new) = (
        tool(json!({"type": "object", "properties": {"hits": {"type": "integer"}}, "required": ["hits"]})),
        tool(json!({"type": "object", "properties": {"hits": {"type": "integer"}}})),
    );
    let labels = |v: &str| json!({"org.opencontainers.image.version": v});
    super::harness::oci_layout(
        &dir.path().join("oci"),
        &[("svc:1", labels("1.4.0"), &[(".claw-tools.json", &old)]), ("svc:2", labels("1.4.1"), &[(".claw-tools.json", &new)])],
    );
    let r = run(dir.path(), &["image:svc:1", "image:svc:2", "--images", "oci:oci", "--format", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let doc = json_out(&r);
    assert_eq!(
        rules_of(&doc),
        [("OUTPUT_REQUIRED_REMOVED".to_string(), "search".to_string()), ("VERSION_NOT_BUMPED".to_string(), String::new())],
        "{doc}"
    );
    let bump = doc["findings"].as_array().unwrap().iter().find(|f| f["rule"] == "VERSION_NOT_BUMPED").unwrap();
    assert!(bump["message"].as_str().unwrap().contains("1.4.0 → 1.4.1"), "{bump}");
}
