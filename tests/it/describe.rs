//! Golden cases for `clawc describe`: `tests/describe/<case>/` holds the inputs and an
//! `args` file (the arguments after `describe`, one per line); the case directory is
//! copied to a temporary directory, which is the working directory of two runs, one with
//! `--format text` and one with `--format json`. `expected/` holds:
//!
//! - `exit-code`, the same for both runs;
//! - when it is 0: `text.txt` (stdout of the text run) and `json.json` (stdout of the
//!   JSON run, one document, which must validate against `schemas/describe.schema.json`);
//! - otherwise: `codes.txt` (the diagnostic codes of the JSON run, one per line) and
//!   `diagnostics.jsonl` (its stdout: one diagnostic per line, no document); the text
//!   run must print nothing on stdout.
//!
//! A case named `err-…` must exit 2 (invalid input), `env-…` 3 (environment failure),
//! any other 0.
//!
//! A case whose args name `oci:oci` gets an OCI image layout written at `oci/` first
//! (built here, no Docker: see [`write_oci_layout`]). `UPDATE_GOLDEN=1 cargo test`
//! rewrites the expectations; review the diff.

use super::harness::{Run, clawc, oci_layout, tree};
use super::schemas::validator;
use serde_json::{Value, json};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn copy_case(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        if rel.starts_with("expected/") || rel == "args" {
            continue;
        }
        let p = to.join(&rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

fn args(case: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(case.join("args")).unwrap_or_else(|e| panic!("{}: args: {e}", case.display()));
    text.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect()
}

fn describe(work: &Path, args: &[String], format: &str) -> Run {
    let o = clawc().current_dir(work).arg("describe").args(args).args(["--format", format]).output().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

const IMAGE_DESCRIPTOR: &str = r#"{
  "version": 2,
  "description": "Service from an image.",
  "skill": "/svc/skills/svc.md",
  "tools": [
    {
      "name": "status",
      "description": "Read the status",
      "inputSchema": { "type": "object" },
      "http": { "method": "GET", "path": "/status" },
      "annotations": { "readOnly": true }
    }
  ]
}
"#;

/// An OCI image layout at `dir` holding one image, `svc:1`: labels `claw.describe` (a
/// descriptor in its one layer, naming a skill also there) and `claw.type`.
fn write_oci_layout(dir: &Path) {
    let files = [("svc/descriptor.json", IMAGE_DESCRIPTOR), ("svc/skills/svc.md", "# svc\n\nCall status first.\n")];
    oci_layout(dir, &[("svc:1", json!({"claw.describe": "/svc/descriptor.json", "claw.type": "openclaw"}), &files)]);
}

// ---- The runner ----

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()))
}

fn differs(what: &str, want: &str, got: &str) -> String {
    format!("{what} differs:\n--- expected\n{want}\n--- got\n{got}")
}

fn run_case(case: &Path, schema: &jsonschema::Validator) -> Result<(), String> {
    let name = case.file_name().unwrap().to_string_lossy().into_owned();
    let work = tempfile::tempdir().unwrap();
    copy_case(case, work.path());
    let args = args(case);
    if args.iter().any(|a| a == "oci:oci") {
        write_oci_layout(&work.path().join("oci"));
    }
    let text = describe(work.path(), &args, "text");
    let json = describe(work.path(), &args, "json");
    let mut problems = Vec::new();
    for run in [&text, &json] {
        if run.stderr.contains("panicked") {
            problems.push(format!("clawc panicked:\n{}", run.stderr));
        }
    }
    if text.code != json.code {
        problems.push(format!("exit code {} with --format text, {} with --format json", text.code, json.code));
    }
    let failed = json.code != 0;
    let codes: Vec<String> = json.codes();
    if failed {
        // No document: the text run prints nothing on stdout, the JSON run only
        // diagnostics, one a line.
        if !text.stdout.is_empty() {
            problems.push(format!("a failed describe printed on stdout (--format text):\n{}", text.stdout));
        }
        for line in json.stdout.lines() {
            match serde_json::from_str::<Value>(line) {
                Ok(v) if v.get("code").is_some() && v.get("service").is_none() => {
                    // Each one has the shape of a document's diagnostics.
                    let doc = json!({"version": 1, "service": "-", "runner": null, "descriptor": null, "diagnostics": [v]});
                    let errors: Vec<String> = schema.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
                    if !errors.is_empty() {
                        problems.push(format!("diagnostic {line} does not match the schema: {errors:?}"));
                    }
                }
                _ => problems.push(format!("a failed describe printed something other than a diagnostic: {line}")),
            }
        }
        if codes.is_empty() {
            problems.push(format!("exit code {} without a diagnostic\nstderr: {}", json.code, text.stderr));
        }
    } else {
        match serde_json::from_str::<Value>(&json.stdout) {
            Ok(doc) => {
                let errors: Vec<String> = schema.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
                if !errors.is_empty() {
                    problems.push(format!("the JSON document does not match schemas/describe.schema.json: {errors:?}"));
                }
            }
            Err(e) => problems.push(format!("--format json did not print one JSON document ({e}):\n{}", json.stdout)),
        }
    }
    // The case name says how it must fail: `err-` invalid input (2), `env-` an
    // environment failure (3, e.g. an image no source has); any other case succeeds.
    let must_exit = if name.starts_with("err-") {
        2
    } else if name.starts_with("env-") {
        3
    } else {
        0
    };
    if json.code != must_exit {
        problems.push(format!("case {name} must exit {must_exit}, got {}\nstderr: {}", json.code, json.stderr));
    }

    let expected = case.join("expected");
    let codes_text: String = codes.iter().map(|c| format!("{c}\n")).collect();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let _ = std::fs::remove_dir_all(&expected);
        std::fs::create_dir_all(&expected).unwrap();
        std::fs::write(expected.join("exit-code"), format!("{}\n", json.code)).unwrap();
        if failed {
            std::fs::write(expected.join("codes.txt"), &codes_text).unwrap();
            std::fs::write(expected.join("diagnostics.jsonl"), &json.stdout).unwrap();
        } else {
            std::fs::write(expected.join("text.txt"), &text.stdout).unwrap();
            std::fs::write(expected.join("json.json"), &json.stdout).unwrap();
        }
        return if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) };
    }
    let want_code = read(&expected.join("exit-code"))?;
    if want_code.trim() != json.code.to_string() {
        problems.push(format!("exit code {}, expected {}\nstderr: {}", json.code, want_code.trim(), json.stderr));
    }
    let files: &[(&str, &str)] = if failed {
        &[("codes.txt", &codes_text), ("diagnostics.jsonl", &json.stdout)]
    } else {
        &[("text.txt", &text.stdout), ("json.json", &json.stdout)]
    };
    for (file, got) in files {
        let want = read(&expected.join(file))?;
        if want != *got {
            problems.push(differs(file, &want, got));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}

#[test]
fn describe_cases() {
    let dir = root().join("tests/describe");
    let mut cases: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("args").exists()).collect();
    cases.sort();
    assert!(cases.len() >= 15, "expected the describe cases under {}", dir.display());
    let schema = validator("describe.schema.json");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| run_case(c, &schema).err().map(|e| format!("=== {}\n{e}", c.file_name().unwrap().to_string_lossy())))
        .collect();
    assert!(failures.is_empty(), "{} of {} describe cases failed:\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

/// The layout [`write_oci_layout`] builds is read as `svc:1` and as the Docker-normalised
/// `docker.io/library/svc:1`, which name the same image.
#[test]
fn describe_image_reference_is_normalised() {
    let work = tempfile::tempdir().unwrap();
    write_oci_layout(&work.path().join("oci"));
    let run = |reference: &str| {
        let args: Vec<String> = ["--image", reference, "--images", "oci:oci", "--no-cache"].map(String::from).to_vec();
        let r = describe(work.path(), &args, "json");
        assert_eq!(r.code, 0, "{reference}: {}\n{}", r.stdout, r.stderr);
        serde_json::from_str::<Value>(&r.stdout).unwrap()
    };
    let short = run("svc:1");
    let long = run("docker.io/library/svc:1");
    assert_eq!(short["descriptor"]["tools"], long["descriptor"]["tools"]);
    assert_eq!(long["runner"]["name"], "openclaw");
    assert_eq!(long["descriptor"]["skill"]["name"], "svc.md");
}

/// The schema is not vacuous: it rejects documents `clawc describe` never prints.
#[test]
fn describe_schema_rejects_other_shapes() {
    let v = validator("describe.schema.json");
    let ok = json!({"version": 1, "service": "s", "runner": null, "descriptor": null, "diagnostics": []});
    assert!(v.is_valid(&ok));
    let mut missing_runner = ok.clone();
    missing_runner.as_object_mut().unwrap().remove("runner");
    let bad_effect = json!({"version": 1, "service": "s", "runner": {"name": "openclaw", "known": true, "from": "x"}, "descriptor": {
        "version": 2, "description": "", "origin": "image", "from": "f", "snapshot": null, "mcp": null, "auth": null,
        "tools": [{"name": "t", "canonical": "s.t", "alias": "s_t", "description": "d", "effect": "maybe",
            "transport": {"type": "mcp", "path": "/mcp", "tool_name": "t"}, "inputSchema": {"type": "object"}, "annotations": null}],
        "feeds": [], "endpoints": [], "memory": null, "skill": null}, "diagnostics": []});
    let bad_diagnostic = json!({"version": 1, "service": "s", "runner": null, "descriptor": null, "diagnostics": [{"code": "x"}]});
    for (what, doc) in [("no runner", missing_runner), ("an unknown effect", bad_effect), ("a diagnostic without severity", bad_diagnostic)]
    {
        assert!(!v.is_valid(&doc), "the schema accepts {what}");
    }
}
