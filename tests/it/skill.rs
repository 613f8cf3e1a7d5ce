//! `clawc skill compile DIR`: Skill Tools packages (`tools.json`) and `tool-manifest.yaml`
//! compiled by the real binary, on copies of the fixtures in `tests/skills/` and on skill
//! folders built by each test. Every invalid form is checked for its diagnostic, and for
//! writing nothing when it is an error.

use super::harness::{Run, clawc, tree};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const OUTPUTS: [&str; 3] = ["dynamic_tools.json", "dynamic_tools.report.json", "dynamic_tools.lock.json"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/skills")
}

/// A copy of `tests/skills/<name>` in a temporary directory (as `<tmp>/<name>`).
fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join(name);
    for (rel, bytes) in tree(&fixtures().join(name)) {
        write(&dst.join(rel), &bytes);
    }
    (tmp, dst)
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A skill folder `<tmp>/<name>` holding `files` (path, text).
fn folder(name: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (rel, text) in files {
        write(&dir.join(rel), text.as_bytes());
    }
    (tmp, dir)
}

/// `clawc skill compile <dir name> --format json <extra>`, run in the folder's parent.
fn compile(dir: &Path, extra: &[&str]) -> Run {
    let o = clawc()
        .current_dir(dir.parent().unwrap())
        .args(["skill", "compile"])
        .arg(dir.file_name().unwrap())
        .args(["--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

/// The counts line (the last line of a JSON run), which has exactly the three keys.
#[track_caller]
fn counts(r: &Run) -> Value {
    let last: Value = serde_json::from_str(r.stdout.lines().last().unwrap_or("")).unwrap_or(Value::Null);
    let keys: Vec<&String> = last.as_object().map(|o| o.keys().collect()).unwrap_or_default();
    assert_eq!(keys, ["compiled_ok", "invalid_tools", "shadowed_tools"], "{}\n{}", r.stdout, r.stderr);
    last
}

fn read_json(dir: &Path, name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))).unwrap()
}

#[track_caller]
fn assert_nothing_written(dir: &Path) {
    for o in OUTPUTS {
        assert!(dir.join(o).symlink_metadata().is_err(), "{o} was written");
    }
}

const SKILL_MD: &str = "---\nname: s\ndescription: test skill\n---\n# S\n";

/// A manifest folder `s` with SKILL.md, two scripts and `manifest` as tool-manifest.yaml.
fn manifest(manifest: &str) -> (tempfile::TempDir, PathBuf) {
    folder("s", &[("SKILL.md", SKILL_MD), ("scripts/run.sh", "#!/bin/sh\necho '{}'\n"), ("tool-manifest.yaml", manifest)])
}

const GOOD_TOOL: &str = "  - name: ok\n    description: fine\n    script: scripts/run.sh\n";

// ---- tool-manifest.yaml ----

#[test]
fn the_weather_manifest_compiles_with_aliases_defaults_and_shadowing() {
    let (_tmp, dir) = fixture("weather");
    let r = compile(&dir, &["--static-tools", "alerts"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(counts(&r), json!({"compiled_ok": 2, "invalid_tools": 2, "shadowed_tools": 1}));
    r.assert_error("clawc::skill::shadowed_tool", "dynamic tool \"alerts\" is shadowed by the static tool \"alerts\"");
    let w = r.assert_error("clawc::skill::invalid_tool", "tool \"radar\" is skipped: rule `template`");
    assert_eq!((w["file"].as_str(), w["line"].as_u64()), (Some("weather/tool-manifest.yaml"), Some(47)));
    assert!(w["message"].as_str().unwrap().contains("reads `cty`, which is neither an input property (city) nor a built-in"), "{w}");
    let dup = r.assert_error(
        "clawc::skill::invalid_tool",
        "tool \"get_weather\" is skipped: rule `duplicate`: the name is declared twice; the first, tools[0], is kept",
    );
    assert_eq!(dup["related"], json!([{"file": "weather/tool-manifest.yaml", "line": 8, "column": 11, "label": "first declared here"}]));

    let tools = read_json(&dir, "dynamic_tools.json");
    assert_eq!(tools["skill"], "weather");
    assert_eq!(tools["manifest_version"], "1");
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["get_weather", "forecast"], "manifest order; the shadowed and invalid tools are left out");
    let get = &tools["tools"][0];
    assert_eq!(
        get["executor"],
        json!({"type": "script", "entry": "scripts/weather.py", "args_template": "--city {{ city }} --units {{ units | default('metric') }}"})
    );
    // Retry merged field by field: backoff from the tool, attempts from the runtime.
    assert_eq!((get["timeout_sec"].clone(), get["retry"].clone()), (json!(20), json!({"max_attempts": 3, "backoff_ms": 250})));
    let forecast = &tools["tools"][1];
    // `parameters` → input_schema, tool-level `script` → executor.entry.
    assert_eq!(forecast["executor"], json!({"type": "script", "entry": "scripts/forecast.sh"}));
    assert_eq!(forecast["input_schema"]["properties"]["days"], json!({"type": "integer", "minimum": 1, "maximum": 10}));
    assert_eq!((forecast["timeout_sec"].clone(), forecast["retry"].clone()), (json!(60), json!({"max_attempts": 3, "backoff_ms": 500})));

    let report = read_json(&dir, "dynamic_tools.report.json");
    assert_eq!(report["counts"], json!({"compiled_ok": 2, "invalid_tools": 2, "shadowed_tools": 1}));
    assert_eq!(report["shadowed"], json!([{"name": "alerts", "static_tool": "alerts"}]));
    assert_eq!(report["valid"][0]["policy_from"], json!({"timeout_sec": "runtime", "max_attempts": "runtime", "backoff_ms": "tool"}));
    assert_eq!(report["valid"][1]["policy_from"], json!({"timeout_sec": "tool", "max_attempts": "runtime", "backoff_ms": "system"}));
    let invalid: Vec<(u64, &str, &str)> = report["invalid"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["index"].as_u64().unwrap(), t["name"].as_str().unwrap(), t["reasons"][0]["rule"].as_str().unwrap()))
        .collect();
    assert_eq!(invalid, [(3, "radar", "template"), (4, "get_weather", "duplicate")]);

    let lock = read_json(&dir, "dynamic_tools.lock.json");
    assert_eq!(lock["compiler"], json!({"name": "clawc", "version": env!("CARGO_PKG_VERSION")}));
    assert_eq!(lock["static_tools"], json!(["alerts"]));
    let files: Vec<(String, String)> = lock["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().into(), f["sha256"].as_str().unwrap().into()))
        .collect();
    let want: Vec<(String, String)> = ["SKILL.md", "scripts/forecast.sh", "scripts/weather.py", "tool-manifest.yaml"]
        .iter()
        .map(|p| {
            use sha2::Digest;
            (p.to_string(), hex::encode(sha2::Sha256::digest(std::fs::read(dir.join(p)).unwrap())))
        })
        .collect();
    assert_eq!(files, want, "every source file of the skill, not the outputs");
    let text = String::from_utf8(std::fs::read(dir.join("dynamic_tools.lock.json")).unwrap()).unwrap();
    assert!(!text.contains(dir.to_str().unwrap()) && !text.contains("/tmp"), "no host paths: {text}");
}

#[test]
fn the_outputs_match_their_schemas() {
    let (_tmp, dir) = fixture("weather");
    assert_eq!(compile(&dir, &["--static-tools", "alerts"]).code, 0);
    for (file, schema) in [
        ("dynamic_tools.json", "dynamic-tools.schema.json"),
        ("dynamic_tools.report.json", "dynamic-tools-report.schema.json"),
        ("dynamic_tools.lock.json", "dynamic-tools-lock.schema.json"),
    ] {
        let v = super::schemas::validator(schema);
        let doc = read_json(&dir, file);
        let errors: Vec<String> = v.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{file} does not match schemas/{schema}: {errors:?}");
    }
    let r = compile(&dir, &[]);
    let v = super::schemas::validator("skill-counts.schema.json");
    assert!(v.is_valid(&counts(&r)));
}

#[test]
fn the_same_folder_gives_the_same_bytes_whatever_the_order() {
    let (_a, first) = fixture("weather");
    assert_eq!(compile(&first, &["--static-tools", "alerts,search"]).code, 0);
    let once = tree(&first);
    // Again: nothing changes, and the files are not rewritten.
    let mtime = |d: &Path| std::fs::metadata(d.join("dynamic_tools.json")).unwrap().modified().unwrap();
    let before = mtime(&first);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(compile(&first, &["--static-tools", "alerts,search"]).code, 0);
    assert_eq!(tree(&first), once);
    assert_eq!(mtime(&first), before, "bytes already right are not rewritten");
    let text = clawc()
        .current_dir(first.parent().unwrap())
        .args(["skill", "compile", "weather", "--static-tools", "alerts,search"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("up to date"), "{}", String::from_utf8_lossy(&text.stdout));

    // The files created in the reverse order, the static tools given in another order.
    let tmp = tempfile::tempdir().unwrap();
    let second = tmp.path().join("weather");
    let mut files: Vec<_> = tree(&fixtures().join("weather")).into_iter().collect();
    files.reverse();
    for (rel, bytes) in files {
        write(&second.join(rel), &bytes);
    }
    assert_eq!(compile(&second, &["--static-tools", "search, alerts,alerts"]).code, 0);
    for o in OUTPUTS {
        assert_eq!(std::fs::read(first.join(o)).unwrap(), std::fs::read(second.join(o)).unwrap(), "{o}");
    }

    // Keys of a mapping in another order: the same tools.
    let flip = |m: &str| {
        m.replace("    description: Current weather for a city\n", "").replace(
            "  - name: get_weather\n    input_schema",
            "  - name: get_weather\n    description: Current weather for a city\n    input_schema",
        )
    };
    let manifest = std::fs::read_to_string(fixtures().join("weather/tool-manifest.yaml")).unwrap();
    let reordered = manifest.replacen(
        "runtime:\n  default_timeout_sec: 20\n  default_retry:\n    max_attempts: 3\n",
        "runtime:\n  default_retry:\n    max_attempts: 3\n  default_timeout_sec: 20\n",
        1,
    );
    assert_ne!(reordered, manifest);
    let (_c, third) = fixture("weather");
    std::fs::write(third.join("tool-manifest.yaml"), flip(&reordered)).unwrap();
    assert_eq!(compile(&third, &["--static-tools", "alerts"]).code, 0);
    assert_eq!(compile(&first, &["--static-tools", "alerts"]).code, 0);
    assert_eq!(read_json(&third, "dynamic_tools.json"), read_json(&first, "dynamic_tools.json"));
    assert_eq!(std::fs::read(third.join("dynamic_tools.json")).unwrap(), std::fs::read(first.join("dynamic_tools.json")).unwrap());
}

#[test]
fn timeout_and_retry_come_from_the_tool_then_the_runtime_then_the_system() {
    let tools = "  - {name: none, description: d, script: scripts/run.sh}\n\
                 \x20 - {name: all, description: d, script: scripts/run.sh, timeout_sec: 7, retry: {max_attempts: 9, backoff_ms: 0}}\n\
                 \x20 - {name: some, description: d, script: scripts/run.sh, retry: {backoff_ms: 10}}\n";
    let policy = |dir: &Path, name: &str| {
        let t = read_json(dir, "dynamic_tools.json")["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap().clone();
        (t["timeout_sec"].as_u64().unwrap(), t["retry"]["max_attempts"].as_u64().unwrap(), t["retry"]["backoff_ms"].as_u64().unwrap())
    };
    // No runtime block: the system defaults (30 s, 2 attempts, 500 ms).
    let (_a, plain) = manifest(&format!("tools:\n{tools}"));
    assert_eq!(compile(&plain, &[]).code, 0);
    assert_eq!(policy(&plain, "none"), (30, 2, 500));
    assert_eq!(policy(&plain, "all"), (7, 9, 0));
    assert_eq!(policy(&plain, "some"), (30, 2, 10));
    // Runtime defaults for some fields.
    let (_b, rt) = manifest(&format!("runtime:\n  default_timeout_sec: 12\n  default_retry: {{backoff_ms: 100}}\ntools:\n{tools}"));
    assert_eq!(compile(&rt, &[]).code, 0);
    assert_eq!(policy(&rt, "none"), (12, 2, 100));
    assert_eq!(policy(&rt, "all"), (7, 9, 0));
    assert_eq!(policy(&rt, "some"), (12, 2, 10));
    let report = read_json(&rt, "dynamic_tools.report.json");
    assert_eq!(report["valid"][2]["policy_from"], json!({"timeout_sec": "runtime", "max_attempts": "system", "backoff_ms": "tool"}));
}

#[test]
fn http_executors_and_their_aliases_are_normalised() {
    let (_t, dir) = manifest(
        "tools:\n\
         \x20 - name: a\n    description: d\n    endpoint: \"https://x.example/{{ q }}\"\n    input_schema: {type: object, properties: {q: {type: string}}}\n\
         \x20 - name: b\n    description: d\n    executor: {type: http, method: put, url: \"https://x.example/\", body_template: '{\"q\": {{ args | tojson }}}', headers_template: {X-Token: '{{ env.TOKEN }}'}}\n\
         \x20 - name: c\n    description: d\n    executor: {endpoint: \"https://x.example/c\", body_template: \"{}\"}\n\
         \x20 - name: d\n    description: d\n    executor: {script: scripts/run.sh}\n",
    );
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(counts(&r), json!({"compiled_ok": 4, "invalid_tools": 0, "shadowed_tools": 0}));
    let tools = read_json(&dir, "dynamic_tools.json")["tools"].clone();
    assert_eq!(tools[0]["executor"], json!({"type": "http", "method": "GET", "url": "https://x.example/{{ q }}"}));
    assert_eq!(
        tools[1]["executor"],
        json!({"type": "http", "method": "PUT", "url": "https://x.example/", "body_template": "{\"q\": {{ args | tojson }}}", "headers_template": {"X-Token": "{{ env.TOKEN }}"}})
    );
    assert_eq!(tools[2]["executor"]["method"], "POST", "a body without a method is a POST");
    assert_eq!(tools[3]["executor"], json!({"type": "script", "entry": "scripts/run.sh"}));
    assert_eq!(tools[3]["input_schema"], json!({"type": "object", "properties": {}}), "no input_schema: no arguments");
}

/// Each invalid tool is a warning naming the tool and the rule; the valid tool beside it
/// still compiles.
#[test]
fn every_invalid_manifest_tool_is_a_warning_and_skipped() {
    let cases: &[(&str, &str, &str)] = &[
        ("description: d\n    script: scripts/run.sh", "rule `name`: `name` is required", "tools[1]"),
        ("name: a.b\n    description: d\n    script: scripts/run.sh", "rule `name`: the name \"a.b\" must match", "a.b"),
        ("name: t\n    script: scripts/run.sh", "rule `description`: `description` is required", "t"),
        ("name: t\n    description: [x]\n    script: scripts/run.sh", "rule `description`: `description` must be a string", "t"),
        (
            "name: t\n    description: d\n    script: scripts/run.sh\n    input_schema: {type: object}\n    parameters: {type: object}",
            "rule `input_schema`: both `input_schema` and its alias `parameters`",
            "t",
        ),
        (
            "name: t\n    description: d\n    script: scripts/run.sh\n    input_schema: {type: string}",
            "rule `input_schema`: `input_schema.type` must be \"object\"",
            "t",
        ),
        (
            "name: t\n    description: d\n    script: scripts/run.sh\n    parameters: {type: object, properties: {a: {type: strng}}}",
            "rule `input_schema`: `parameters` is not a valid JSON Schema",
            "t",
        ),
        (
            "name: t\n    description: d\n    input_schema: [a]\n    script: scripts/run.sh",
            "rule `input_schema`: `input_schema` must be a mapping",
            "t",
        ),
        ("name: t\n    description: d", "rule `executor`: `executor` is required", "t"),
        (
            "name: t\n    description: d\n    executor: {type: ftp, entry: scripts/run.sh}",
            "rule `executor`: executor type \"ftp\" is not `script` or `http`",
            "t",
        ),
        ("name: t\n    description: d\n    executor: {args_template: x}", "rule `executor`: `executor.type` is required", "t"),
        (
            "name: t\n    description: d\n    executor: {type: script, entry: scripts/run.sh, script: scripts/run.sh}",
            "rule `executor`: both `executor.entry` and `executor.script` are given",
            "t",
        ),
        (
            "name: t\n    description: d\n    script: scripts/run.sh\n    executor: {entry: scripts/run.sh}",
            "rule `executor`: both `executor.entry` and `script` are given",
            "t",
        ),
        (
            "name: t\n    description: d\n    executor: {type: script, entry: scripts/run.sh, url: 'https://x'}",
            "rule `executor`: `executor.url` is a field of an http executor",
            "t",
        ),
        (
            "name: t\n    description: d\n    executor: {type: http, url: 'https://x', args_template: y}",
            "rule `executor`: `executor.args_template` is a field of a script executor",
            "t",
        ),
        ("name: t\n    description: d\n    executor: {type: script}", "rule `executor`: a script executor needs `entry`", "t"),
        ("name: t\n    description: d\n    executor: {type: http}", "rule `executor`: an http executor needs `url`", "t"),
        (
            "name: t\n    description: d\n    executor: {type: script, entry: scripts/run.sh, timeout: 3}",
            "rule `executor`: `executor.timeout` is not an executor field",
            "t",
        ),
        (
            "name: t\n    description: d\n    script: scripts/missing.sh",
            "rule `script`: `script`: \"scripts/missing.sh\" does not exist in the skill folder",
            "t",
        ),
        (
            "name: t\n    description: d\n    script: ../outside.sh",
            "rule `script`: `script`: \"../outside.sh\" uses `..` to leave the skill folder",
            "t",
        ),
        ("name: t\n    description: d\n    script: /bin/sh", "rule `script`: `script`: \"/bin/sh\" is absolute", "t"),
        ("name: t\n    description: d\n    script: scripts", "rule `script`: `script`: \"scripts\" is a directory, not a file", "t"),
        (
            "name: t\n    description: d\n    endpoint: ftp://x",
            "rule `executor`: `endpoint` \"ftp://x\" is not an http:// or https:// URL",
            "t",
        ),
        (
            "name: t\n    description: d\n    executor: {url: 'https://x', method: TRACE}",
            "rule `executor`: `executor.method` \"TRACE\" is not one of",
            "t",
        ),
        (
            "name: t\n    description: d\n    executor: {url: 'https://x', headers_template: {'Bad Name': v}}",
            "rule `executor`: \"Bad Name\" is not an HTTP header name",
            "t",
        ),
        (
            "name: t\n    description: d\n    executor: {url: 'https://x', headers_template: [a]}",
            "rule `executor`: `executor.headers_template` must be a mapping",
            "t",
        ),
        (
            "name: t\n    description: d\n    executor: {url: 'https://x/{{ q ', body_template: x}",
            "rule `template`: `executor.url` is not a valid template",
            "t",
        ),
        (
            "name: t\n    description: d\n    executor: {entry: scripts/run.sh, args_template: '{{ nope }}'}",
            "rule `template`: `executor.args_template` reads `nope`, which is neither an input property (the tool has none) nor a built-in (args, env)",
            "t",
        ),
        (
            "name: t\n    description: d\n    input_schema: {type: object, properties: {q: {type: string}}}\n    executor: {url: 'https://x', headers_template: {A: '{{ q }}{{ r.s }}'}}",
            "rule `template`: `executor.headers_template.A` reads `r`, which is neither an input property (q)",
            "t",
        ),
        (
            "name: t\n    description: d\n    executor: {entry: scripts/run.sh, args_template: \"{% include 'x' %}\"}",
            "rule `template`: `executor.args_template` uses `include`",
            "t",
        ),
        (
            "name: t\n    description: d\n    script: scripts/run.sh\n    timeout_sec: 0",
            "rule `timeout`: `timeout_sec` must be an integer from 1 to 3600, not 0",
            "t",
        ),
        (
            "name: t\n    description: d\n    script: scripts/run.sh\n    timeout_sec: '30'",
            "rule `timeout`: `timeout_sec` must be an integer",
            "t",
        ),
        (
            "name: t\n    description: d\n    script: scripts/run.sh\n    retry: {max_attempts: 11}",
            "rule `retry`: `retry.max_attempts` must be an integer from 1 to 10, not 11",
            "t",
        ),
        (
            "name: t\n    description: d\n    script: scripts/run.sh\n    retry: {attempts: 2}",
            "rule `retry`: `retry` takes max_attempts and backoff_ms, not `attempts`",
            "t",
        ),
        ("name: t\n    description: d\n    script: scripts/run.sh\n    retry: 3", "rule `retry`: `retry` must be a mapping", "t"),
        (
            "name: t\n    descripton: d\n    description: d\n    script: scripts/run.sh",
            "rule `misspelt_key`: `descripton` looks like `description` misspelt",
            "t",
        ),
        (
            "name: t\n    description: d\n    script: scripts/run.sh\n    args_template: x",
            "rule `executor`: `args_template` is a field of `executor`, not of the tool",
            "t",
        ),
        (
            "name: ok\n    description: again\n    script: scripts/run.sh",
            "rule `duplicate`: the name is declared twice; the first, tools[0], is kept",
            "ok",
        ),
        ("just a string", "rule `shape`: tools[1] is a string, not a mapping", "tools[1]"),
    ];
    for (tool, part, label) in cases {
        let text = format!("tools:\n{GOOD_TOOL}  - {tool}\n");
        let (_t, dir) = manifest(&text);
        let r = compile(&dir, &[]);
        assert_eq!(r.code, 0, "{tool}: {}\n{}", r.stdout, r.stderr);
        let d = r.assert_error("clawc::skill::invalid_tool", part);
        assert_eq!(d["severity"], "warning");
        let shown = if label.starts_with("tools[") { label.to_string() } else { format!("tool \"{label}\"") };
        assert!(d["message"].as_str().unwrap().starts_with(&format!("{shown} is skipped: rule `")), "{tool}: {d}");
        assert_eq!(d["file"], "s/tool-manifest.yaml", "{tool}");
        assert!(d["line"].as_u64().unwrap() >= 5, "{tool}: points into the bad tool: {d}");
        assert_eq!(counts(&r), json!({"compiled_ok": 1, "invalid_tools": 1, "shadowed_tools": 0}), "{tool}");
        let tools = read_json(&dir, "dynamic_tools.json");
        assert_eq!(tools["tools"].as_array().unwrap().len(), 1, "{tool}");
        assert_eq!(tools["tools"][0]["name"], "ok");
        let report = read_json(&dir, "dynamic_tools.report.json");
        assert_eq!(report["invalid"][0]["index"], 1, "{tool}");
        assert!(
            report["invalid"][0]["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| part.contains(&format!("rule `{}`", x["rule"].as_str().unwrap()))),
            "{tool}: {report}"
        );
    }
}

/// A manifest that cannot be compiled is exit 2 and nothing is written.
#[test]
fn every_unreadable_manifest_is_exit_2_and_writes_nothing() {
    let cases: &[(&str, &str, &str)] = &[
        ("tools: [a\n", "clawc::parse::yaml_syntax", ""),
        ("a: 1\na: 2\n", "clawc::parse::duplicate_key", ""),
        ("- name: x\n", "clawc::skill::invalid_manifest", "`s/tool-manifest.yaml` is a list, not a mapping with `tools`"),
        ("version: 1\n", "clawc::skill::invalid_manifest", "`s/tool-manifest.yaml` has no `tools` list"),
        ("tools: {name: x}\n", "clawc::skill::invalid_manifest", "`tools` must be a list of tools, not a mapping"),
        ("version: [1]\ntools: []\n", "clawc::skill::invalid_manifest", "`version` must be a number or a string"),
        ("runtime: 5\ntools: []\n", "clawc::skill::invalid_manifest", "`runtime` must be a mapping"),
        (
            "runtime: {default_timeout_sec: 0}\ntools: []\n",
            "clawc::skill::invalid_manifest",
            "`runtime.default_timeout_sec` must be an integer from 1 to 3600, not 0",
        ),
        (
            "runtime: {default_retry: {max_attempts: many}}\ntools: []\n",
            "clawc::skill::invalid_manifest",
            "`runtime.default_retry.max_attempts` must be an integer from 1 to 10, not many",
        ),
        (
            "runtime: {default_retry: {backoff_ms: -1}}\ntools: []\n",
            "clawc::skill::invalid_manifest",
            "`runtime.default_retry.backoff_ms` must be an integer from 0 to 600000",
        ),
        ("a: &a [*a]\ntools: []\n", "clawc::parse::yaml_syntax", ""),
    ];
    for (text, code, part) in cases {
        let (_t, dir) = manifest(text);
        let r = compile(&dir, &[]);
        assert_eq!(r.code, 2, "{text}: {}\n{}", r.stdout, r.stderr);
        let d = r.assert_error(code, part);
        assert_eq!(d["severity"], "error", "{text}");
        assert_nothing_written(&dir);
        assert!(!r.stdout.contains("compiled_ok"), "no counts after an error: {}", r.stdout);
    }
}

#[test]
fn unknown_top_level_and_runtime_keys_are_warnings() {
    let (_t, dir) = manifest(&format!("versoin: 1\nruntime: {{default_timeout: 5}}\ntools:\n{GOOD_TOOL}"));
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let d = r.assert_error("clawc::skill::invalid_manifest", "unknown key `versoin` in `s/tool-manifest.yaml` is ignored");
    assert_eq!((d["severity"].as_str(), d["help"].as_str()), (Some("warning"), Some("did you mean `version`?")));
    r.assert_error("clawc::skill::invalid_manifest", "unknown key `runtime.default_timeout`");
    assert_eq!(counts(&r)["compiled_ok"], 1);
}

#[test]
fn hostile_files_are_refused_with_a_diagnostic() {
    // Over 8 MiB.
    let (_a, big) = manifest("tools: []\n");
    std::fs::write(big.join("tool-manifest.yaml"), format!("tools: []\n#{}\n", "x".repeat(8 << 20))).unwrap();
    let r = compile(&big, &[]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::source::too_large", "`s/tool-manifest.yaml` is at least");
    assert_nothing_written(&big);
    // Not UTF-8.
    let (_b, bin) = manifest("tools: []\n");
    std::fs::write(bin.join("tool-manifest.yaml"), b"tools: [\xff]\n").unwrap();
    let r = compile(&bin, &[]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::source::not_utf8", "is not UTF-8 text");
    assert_nothing_written(&bin);
    // A FIFO is never opened for reading (the run would hang).
    let (_c, fifo) = manifest("tools: []\n");
    std::fs::remove_file(fifo.join("tool-manifest.yaml")).unwrap();
    let c = std::ffi::CString::new(fifo.join("tool-manifest.yaml").as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let r = compile(&fifo, &[]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::source::not_a_file", "is a FIFO, not a regular file");
    // An alias bomb.
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        bomb.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n", p = i - 1));
    }
    bomb.push_str("tools: []\n");
    let (_d, b) = manifest(&bomb);
    let r = compile(&b, &[]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::parse::alias_budget", "");
    // Too many tools.
    let many = format!("tools:\n{}", "  - {name: a, description: d, script: scripts/run.sh}\n".repeat(10_001));
    let (_e, m) = manifest(&many);
    let r = compile(&m, &[]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::skill::invalid_manifest", "declares 10001 tools; the limit is 10000");
    // Deep nesting.
    let deep = format!("tools: []\nx: {}{}\n", "[".repeat(200), "]".repeat(200));
    let (_f, d) = manifest(&deep);
    let r = compile(&d, &[]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::parse::too_deep", "");
}

#[test]
fn a_folder_too_large_to_lock_is_refused() {
    let (_a, deep) = manifest(&format!("tools:\n{GOOD_TOOL}"));
    let nested: PathBuf = (0..33).map(|i| format!("d{i}")).collect();
    write(&deep.join(nested).join("x.txt"), b"x");
    let r = compile(&deep, &[]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    r.assert_error("clawc::skill::too_large", "the skill folder `s` nests deeper than 32 directories (at `s/d0/d1/");
    assert_nothing_written(&deep);
    let (_b, many) = manifest(&format!("tools:\n{GOOD_TOOL}"));
    std::fs::create_dir(many.join("refs")).unwrap();
    for i in 0..10_000 {
        std::fs::write(many.join("refs").join(i.to_string()), "").unwrap();
    }
    let r = compile(&many, &[]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    r.assert_error("clawc::skill::too_large", "the skill folder `s` holds more than 10000 files");
    assert_nothing_written(&many);
}

#[test]
fn symlinks_out_of_the_folder_are_refused() {
    // The manifest itself is a symlink out of the folder.
    let (tmp, dir) = manifest("tools: []\n");
    std::fs::write(tmp.path().join("outside.yaml"), format!("tools:\n{GOOD_TOOL}")).unwrap();
    std::fs::remove_file(dir.join("tool-manifest.yaml")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside.yaml"), dir.join("tool-manifest.yaml")).unwrap();
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    r.assert_error("clawc::source::path_escape", "`s/tool-manifest.yaml` resolves outside the input root");
    assert_nothing_written(&dir);

    // A script the tool names leads out: the tool is invalid, and the folder (read whole
    // for the lock) is refused.
    let (tmp, dir) = manifest(&format!("tools:\n{GOOD_TOOL}  - {{name: x, description: d, script: scripts/x.sh}}\n"));
    std::fs::write(tmp.path().join("secret"), "TOKEN").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("secret"), dir.join("scripts/x.sh")).unwrap();
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    r.assert_error(
        "clawc::skill::invalid_tool",
        "tool \"x\" is skipped: rule `script`: `script`: \"scripts/x.sh\" is a symlink that leads out of the skill folder",
    );
    r.assert_error("clawc::source::path_escape", "`s/scripts/x.sh` is a symlink that leads out of the skill folder");
    assert_nothing_written(&dir);

    // A symlink inside the folder to a file inside it is hashed as that file.
    let (_t, dir) = manifest(&format!("tools:\n{GOOD_TOOL}  - {{name: y, description: d, script: scripts/link.sh}}\n"));
    std::os::unix::fs::symlink("run.sh", dir.join("scripts/link.sh")).unwrap();
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let lock = read_json(&dir, "dynamic_tools.lock.json");
    let files = lock["files"].as_array().unwrap();
    let sha = |p: &str| files.iter().find(|f| f["path"] == p).unwrap()["sha256"].clone();
    assert_eq!(sha("scripts/link.sh"), sha("scripts/run.sh"));
}

#[test]
fn outputs_are_never_written_through_a_symlink() {
    let (tmp, dir) = fixture("weather");
    let victim = tmp.path().join("victim.json");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("dynamic_tools.json")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("dynamic_tools.lock.json")).unwrap();
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    for o in OUTPUTS {
        assert!(dir.join(o).symlink_metadata().unwrap().file_type().is_file(), "{o}");
    }
    // A directory at an output name is refused before anything is written.
    let (_t, dir) = fixture("weather");
    std::fs::create_dir(dir.join("dynamic_tools.report.json")).unwrap();
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 3, "{}", r.stdout);
    r.assert_error("clawc::output::not_owned", "`weather/dynamic_tools.report.json` is a directory");
    assert!(!dir.join("dynamic_tools.json").exists());
    assert!(tree(&dir).keys().all(|k| !k.contains(".clawc-")), "no temporary file is left: {:?}", tree(&dir).keys());
}

// ---- Skill Tools packages ----

#[test]
fn a_skill_tools_package_is_validated_and_counted_and_nothing_is_written() {
    let (_tmp, dir) = fixture("count-words");
    let before = tree(&dir);
    let r = compile(&dir, &["--static-tools", "stub_tool"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(counts(&r), json!({"compiled_ok": 1, "invalid_tools": 1, "shadowed_tools": 1}));
    let d = r.assert_error(
        "clawc::skill::invalid_tool",
        "tool \"Count-Lines\" is skipped: rule `name`: the name \"Count-Lines\" must match ^[a-z][a-z0-9_]*$",
    );
    assert_eq!((d["file"].as_str(), d["line"].as_u64()), (Some("count-words/tools.json"), Some(13)));
    r.assert_error("clawc::skill::shadowed_tool", "\"stub_tool\"");
    assert_eq!(tree(&dir), before, "a package is checked, not rewritten");
    let text = clawc().current_dir(dir.parent().unwrap()).args(["skill", "compile", "count-words"]).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("compiled_ok 2 · invalid_tools 1 · shadowed_tools 0"));
}

fn package(name: &str, tools_json: &str) -> (tempfile::TempDir, PathBuf) {
    let md = format!("---\nname: {name}\ndescription: d\n---\n# T\n");
    folder(name, &[("SKILL.md", md.as_str()), ("tools.json", tools_json), ("scripts/t.py", "print(1)\n")])
}

#[test]
fn every_invalid_package_is_exit_2() {
    let ok = r#"[{"name": "t", "description": "d"}]"#;
    let cases: Vec<(tempfile::TempDir, PathBuf, &str)> = vec![
        {
            let (t, d) = package("p", "[{\"name\": \"t\",}]");
            (t, d, "`p/tools.json` is not valid JSON")
        },
        {
            let (t, d) = package("p", r#"{"name": "t", "description": "d"}"#);
            (t, d, "`p/tools.json` is not an array of tools (it is an object)")
        },
        {
            let (t, d) = package("p", &format!("{}1{}", "[".repeat(200), "]".repeat(200)));
            (t, d, "`p/tools.json` is not valid JSON: recursion limit exceeded")
        },
        {
            let (t, d) = package("p", &format!("[{}]", vec![r#"{"name": "t", "description": "d"}"#; 10_001].join(",")));
            (t, d, "declares 10001 tools; the limit is 10000")
        },
        {
            let (t, d) = package("Bad_Name", ok);
            (t, d, "the skill folder `Bad_Name` has an invalid name \"Bad_Name\": it holds 'B'")
        },
        {
            let (t, d) = package("a--b", ok);
            (t, d, "two hyphens in a row")
        },
        {
            let (t, d) = folder("p", &[("SKILL.md", "---\nname: q\n---\n"), ("tools.json", ok)]);
            (t, d, "`p/SKILL.md` names the skill \"q\", but its folder is \"p\"")
        },
        {
            let (t, d) = folder("p", &[("tools.json", ok)]);
            (t, d, "`p/SKILL.md` does not exist")
        },
        {
            let (t, d) = folder("p", &[("SKILL.md", "# No frontmatter\n"), ("tools.json", ok)]);
            (t, d, "`p/SKILL.md` has no YAML frontmatter")
        },
        {
            let (t, d) = folder("p", &[("SKILL.md", "---\ndescription: d\n---\n"), ("tools.json", ok)]);
            (t, d, "`p/SKILL.md`: the frontmatter has no `name`")
        },
        {
            let (t, d) = folder("p", &[("SKILL.md", "---\nname: p\n"), ("tools.json", ok)]);
            (t, d, "the YAML frontmatter is not closed")
        },
    ];
    for (_t, dir, part) in &cases {
        let r = compile(dir, &[]);
        assert_eq!(r.code, 2, "{part}: {}\n{}", r.stdout, r.stderr);
        let d = r.assert_error("clawc::skill::invalid_package", part);
        assert_eq!(d["severity"], "error");
        assert_nothing_written(dir);
    }
    // A frontmatter that is not YAML is the YAML reader's error, in SKILL.md.
    let (_t, dir) = folder("p", &[("SKILL.md", "---\nname: [p\n---\n"), ("tools.json", ok)]);
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 2);
    assert_eq!(r.assert_error("clawc::parse::yaml_syntax", "")["file"], "p/SKILL.md");
}

#[test]
fn every_invalid_package_tool_is_a_warning_and_skipped() {
    let cases: &[(&str, &str, &str)] = &[
        (r#"{"description": "d"}"#, "rule `name`: `name` is required", "tools[1]"),
        (r#"{"name": 5, "description": "d"}"#, "rule `name`: `name` must be a string, not a number", "tools[1]"),
        (r#"{"name": "1x", "description": "d"}"#, "rule `name`: the name \"1x\" must match", "1x"),
        (r#"{"name": "t"}"#, "rule `description`: `description` is required", "t"),
        (r#"{"name": "t", "description": " "}"#, "rule `description`: `description` is empty", "t"),
        (r#"{"name": "ok", "description": "again"}"#, "rule `duplicate`: the name is declared twice; the first, tools[0], is kept", "ok"),
        (r#"{"name": "t", "description": "d", "script": "scripts/none.py"}"#, "rule `script`: \"scripts/none.py\" does not exist", "t"),
        (r#"{"name": "t", "description": "d", "script": "../p/scripts/t.py"}"#, "rule `script`: \"../p/scripts/t.py\" uses `..`", "t"),
        (r#"{"name": "t", "description": "d", "script": 3}"#, "rule `script`: `script` must be a string", "t"),
        (r#"{"name": "t", "description": "d", "parameters": []}"#, "rule `parameters`: `parameters` must be an object", "t"),
        (
            r#"{"name": "t", "description": "d", "parameters": {"a": {"type": "integer", "description": "a"}}}"#,
            "rule `parameters`: parameter \"a\": type \"integer\" is not one of",
            "t",
        ),
        (
            r#"{"name": "t", "description": "d", "parameters": {"a": {"type": "string"}}}"#,
            "rule `parameters`: parameter \"a\": `description` is required",
            "t",
        ),
        (
            r#"{"name": "t", "description": "d", "parameters": {"a": {"type": "string", "description": "a", "minLength": 1}}}"#,
            "rule `parameters`: parameter \"a\": `minLength` is not part of the Skill Tools parameter subset",
            "t",
        ),
        (
            r#"{"name": "t", "description": "d", "parameters": {"a": {"type": "number", "description": "a", "enum": ["x"]}}}"#,
            "rule `parameters`: parameter \"a\": enum value 0 is a string, not a number",
            "t",
        ),
        (
            r#"{"name": "t", "description": "d", "parameters": {"a": {"type": "string", "description": "a", "optional": 1}}}"#,
            "rule `parameters`: parameter \"a\": `optional` must be true or false",
            "t",
        ),
        (r#"{"name": "t", "description": "d", "paramters": {}}"#, "rule `misspelt_key`: `paramters` looks like `parameters` misspelt", "t"),
        (r#""t""#, "rule `shape`: tools[1] is a string, not an object", "tools[1]"),
        (r#"{"name": "t", "description": "d", "name": "u"}"#, "rule `shape`: the key `name` is given twice", "t"),
    ];
    for (tool, part, label) in cases {
        let (_t, dir) = package("p", &format!("[{{\"name\": \"ok\", \"description\": \"fine\", \"script\": \"scripts/t.py\"}},\n {tool}]"));
        let r = compile(&dir, &[]);
        assert_eq!(r.code, 0, "{tool}: {}\n{}", r.stdout, r.stderr);
        let d = r.assert_error("clawc::skill::invalid_tool", part);
        let shown = if label.starts_with("tools[") { label.to_string() } else { format!("tool \"{label}\"") };
        assert!(d["message"].as_str().unwrap().starts_with(&format!("{shown} is skipped")), "{tool}: {d}");
        assert_eq!((d["file"].as_str(), d["line"].as_u64()), (Some("p/tools.json"), Some(2)), "{tool}");
        assert_eq!(counts(&r), json!({"compiled_ok": 1, "invalid_tools": 1, "shadowed_tools": 0}), "{tool}");
    }
    // Unknown keys that are no misspelling are ignored, as the specification's runtimes do.
    let (_t, dir) = package("p", r#"[{"name": "t", "description": "d", "version": "2", "x-vendor": true}]"#);
    let r = compile(&dir, &[]);
    assert_eq!(counts(&r), json!({"compiled_ok": 1, "invalid_tools": 0, "shadowed_tools": 0}), "{}", r.stdout);
    // A script symlinked out of the folder.
    let (tmp, dir) = package("p", r#"[{"name": "t", "description": "d", "script": "scripts/out.py"}]"#);
    std::fs::write(tmp.path().join("secret.py"), "x").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("secret.py"), dir.join("scripts/out.py")).unwrap();
    let r = compile(&dir, &[]);
    r.assert_error("clawc::skill::invalid_tool", "rule `script`: \"scripts/out.py\" is a symlink that leads out of the skill folder");
}

#[test]
fn a_folder_with_neither_file_is_exit_2() {
    let (_t, dir) = folder("p", &[("SKILL.md", "---\nname: p\n---\n")]);
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::source::missing_file", "`p` holds neither tool-manifest.yaml nor tools.json");
    let r = compile(&dir.join("missing"), &[]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::source::missing_file", "is not a skill folder");
}

#[test]
fn a_package_beside_a_manifest_is_checked_too() {
    let (_t, dir) = manifest(&format!("tools:\n{GOOD_TOOL}"));
    std::fs::write(dir.join("tools.json"), "{}").unwrap();
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 2);
    r.assert_error("clawc::skill::invalid_package", "`s/tools.json` is not an array");
    assert_nothing_written(&dir);
    std::fs::write(dir.join("tools.json"), r#"[{"name": "pkg", "description": "d"}, {"name": "X"}]"#).unwrap();
    let r = compile(&dir, &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    r.assert_error("clawc::skill::invalid_tool", "tool \"X\"");
    assert_eq!(counts(&r), json!({"compiled_ok": 1, "invalid_tools": 0, "shadowed_tools": 0}), "the manifest's counts");
}

#[test]
fn the_help_says_what_each_exit_code_means() {
    let o = clawc().args(["skill", "compile", "--help"]).output().unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("Exit codes: 0 compiled") && out.contains("docs/skills.md") && out.contains("--static-tools"), "{out}");
}
