//! `clawc.toml` and the settings: discovery up to the repository root and never above,
//! precedence (flag > CLAWC_IMAGES > file > default), paths relative to the file, every
//! bad or hostile file refused with its code and nothing written, `--config` and
//! `--no-config`, `--strict`, `clawc config`, and the `--help` exit-code footers.

use super::harness::{Run, clawc, http_descriptor, tree};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A git work tree (a `.git` directory is what clawc looks for) inside a temporary
/// directory, with a pod in `deploy/` whose `api` is described by a file under `svc/`.
struct Repo {
    tmp: tempfile::TempDir,
}

const POD: &str = "services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    image: api:1\n";

impl Repo {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let r = Repo { tmp };
        r.write("repo/.git/HEAD", "ref: refs/heads/main\n");
        r.write("repo/deploy/claw-pod.yml", POD);
        r.write("repo/svc/api.json", &http_descriptor(&["a", "b"]));
        r
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// `clawc ARGS` in `cwd` (relative to the temporary directory), with no CLAWC_IMAGES
    /// unless `env` sets it, so the file's `images` is what counts.
    fn run(&self, cwd: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = clawc();
        c.env_remove("CLAWC_IMAGES").current_dir(self.path(cwd)).args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        let run = Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into(),
            stderr: String::from_utf8_lossy(&o.stderr).into(),
        };
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        run
    }

    /// `clawc compile deploy/claw-pod.yml --format json ARGS` from the repository's top.
    fn compile(&self, args: &[&str]) -> Run {
        let mut all = vec!["compile", "deploy/claw-pod.yml", "--format", "json"];
        all.extend(args);
        self.run("repo", &all, &[])
    }

    /// `clawc config deploy/claw-pod.yml --format json ARGS` from the repository's top,
    /// checked against its schema.
    fn settings(&self, args: &[&str], env: &[(&str, &str)]) -> Value {
        let mut all = vec!["config", "deploy/claw-pod.yml", "--format", "json"];
        all.extend(args);
        let run = self.run("repo", &all, env);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        let doc: Value = serde_json::from_str(&run.stdout).unwrap();
        let schema = super::schemas::validator("config.schema.json");
        let errors: Vec<String> = schema.iter_errors(&doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "clawc config output does not match schemas/config.schema.json: {errors:?}\n{doc}");
        doc
    }

    fn nothing_written(&self) -> bool {
        !self.path("repo/deploy/.claw-compiled").exists() && !self.path("repo/build").exists()
    }
}

/// Text as one line: drawn diagnostics and help wrap long messages.
fn flat(s: &str) -> String {
    s.replace('│', " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The setting `key` (the first row of it) of a `clawc config` document.
fn setting<'a>(doc: &'a Value, key: &str) -> &'a Value {
    doc["settings"].as_array().unwrap().iter().find(|s| s["key"] == key).unwrap_or_else(|| panic!("no {key} in {doc}"))
}

/// Where a setting came from, as `clawc config` prints it: `flag`, `env VAR`, `FILE:LINE`, `default`.
fn from_of(s: &Value) -> String {
    let from = &s["from"];
    match from["source"].as_str().unwrap() {
        "file" => format!("{}:{}", from["file"].as_str().unwrap(), from["line"]),
        "env" => format!("env {}", from["variable"].as_str().unwrap()),
        other => other.to_string(),
    }
}

fn source(doc: &Value, key: &str) -> String {
    from_of(setting(doc, key))
}

#[test]
fn the_repository_file_is_found_from_the_pod_and_its_paths_are_its_own() {
    let r = Repo::new();
    r.write("repo/clawc.toml", "images = \"none\"\nout = \"build/compiled\"\ndescriptor = \"api=svc/api.json\"\n");
    // From the top, from the pod's directory and from elsewhere: the same file, the same tree.
    for (cwd, pod) in [("repo", "deploy/claw-pod.yml"), ("repo/deploy", "claw-pod.yml"), ("", "repo/deploy/claw-pod.yml")] {
        let run = r.run(cwd, &["compile", pod, "--format", "json"], &[]);
        assert_eq!(run.code, 0, "from {cwd:?}: {}{}", run.stdout, run.stderr);
        let tools = std::fs::read_to_string(r.path("repo/build/compiled/context/bot/tools.json")).unwrap();
        assert!(tools.contains("\"api.b\""), "the file's descriptor was used: {tools}");
        assert!(!r.path("repo/deploy/.claw-compiled").exists(), "out from the file, relative to it");
    }
    let doc = r.settings(&[], &[]);
    assert_eq!(doc["file"], "../clawc.toml");
    assert_eq!(source(&doc, "images"), "../clawc.toml:1");
    assert_eq!(setting(&doc, "out")["value"], "build/compiled", "shown as a flag from the current directory would take it");
    assert_eq!(setting(&doc, "descriptor")["value"], "api=svc/api.json");
    assert_eq!(source(&doc, "image-jobs"), "default");
    // A nearer file wins; files are not merged.
    r.write("repo/deploy/clawc.toml", "image-jobs = 3\n");
    let doc = r.settings(&[], &[]);
    assert_eq!((doc["file"].as_str(), source(&doc, "image-jobs")), (Some("clawc.toml"), "clawc.toml:1".to_string()));
    assert_eq!(source(&doc, "images"), "default");
}

#[test]
fn discovery_stops_at_the_repository_root() {
    let r = Repo::new();
    // Above the work tree: never read (it would be an error if it were).
    r.write("clawc.toml", "not-a-key = 1\n");
    let run = r.compile(&["--images", "none", "--descriptor", "api=svc/api.json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(r.settings(&[], &[])["file"], Value::Null);
    // Outside any work tree only the pod's own directory is looked in.
    std::fs::remove_dir_all(r.path("repo/.git")).unwrap();
    r.write("repo/clawc.toml", "not-a-key = 1\n");
    assert_eq!(r.settings(&["--images", "none"], &[])["file"], Value::Null);
    r.write("repo/deploy/clawc.toml", "strict = true\n");
    assert_eq!(source(&r.settings(&[], &[]), "strict"), "clawc.toml:1");
}

#[test]
fn flags_win_over_the_environment_which_wins_over_the_file() {
    let r = Repo::new();
    r.write(
        "repo/clawc.toml",
        "images = [\"oci:build/images\", \"docker\"]\nrunner = [\"bot=codex\", \"api=claude\"]\nstrict = true\nno-cache = true\n",
    );
    let doc = r.settings(&[], &[]);
    assert_eq!(setting(&doc, "images")["value"], serde_json::json!(["oci:build/images", "docker"]));
    assert_eq!(source(&doc, "images"), "../clawc.toml:1");
    let doc = r.settings(&[], &[("CLAWC_IMAGES", "none")]);
    assert_eq!(
        (setting(&doc, "images")["value"].clone(), source(&doc, "images")),
        (serde_json::json!(["none"]), "env CLAWC_IMAGES".into())
    );
    let doc =
        r.settings(&["--images", "docker", "--strict=false", "--no-cache=false", "--runner", "bot=hermes"], &[("CLAWC_IMAGES", "none")]);
    assert_eq!((setting(&doc, "images")["value"].clone(), source(&doc, "images")), (serde_json::json!(["docker"]), "flag".into()));
    assert_eq!((setting(&doc, "strict")["value"].clone(), source(&doc, "strict")), (Value::Bool(false), "flag".into()));
    assert_eq!(setting(&doc, "no-cache")["value"], false);
    // A --runner replaces the file's entry for its service only.
    let runners: Vec<(String, String)> = doc["settings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["key"] == "runner")
        .map(|s| (s["value"].as_str().unwrap().to_string(), from_of(s)))
        .collect();
    assert_eq!(runners, [("api=claude-code".to_string(), "../clawc.toml:2".to_string()), ("bot=hermes".into(), "flag".into())]);
    // --no-config: flags, the environment and defaults only.
    let doc = r.settings(&["--no-config"], &[]);
    assert_eq!((doc["file"].clone(), source(&doc, "images"), source(&doc, "strict")), (Value::Null, "default".into(), "default".into()));
}

#[test]
fn the_human_listing_names_each_origin() {
    let r = Repo::new();
    r.write("repo/clawc.toml", "# settings\n\nimages = \"none\"\n");
    let run = r.run("repo", &["config", "deploy/claw-pod.yml", "--strict"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("settings for deploy/claw-pod.yml (clawc.toml: ../clawc.toml)\n"), "{}", run.stdout);
    let line = |key: &str| run.stdout.lines().find(|l| l.trim_start().starts_with(&format!("{key} "))).unwrap().to_string();
    assert!(line("images").ends_with("../clawc.toml:3"), "{}", run.stdout);
    assert!(line("strict").ends_with("flag") && line("out").ends_with("default"), "{}", run.stdout);
    // One column for the origin, whatever the value's width.
    let at: Vec<usize> = ["images", "out", "strict"].iter().map(|k| line(k).rfind("  ").unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] == w[1]), "{}", run.stdout);
    let keys = r.run("repo", &["config", "--keys"], &[]);
    assert!(
        keys.stdout.contains("image-jobs = an integer from 1 to 256") && keys.stdout.contains("command line only: secrets"),
        "{}",
        keys.stdout
    );
}

#[test]
fn an_unknown_key_is_placed_with_a_suggestion_and_nothing_is_written() {
    let r = Repo::new();
    r.write("repo/clawc.toml", "images = \"none\"\n\nimgaes = \"docker\"\n");
    let run = r.compile(&[]);
    assert_eq!(run.code, 2);
    let d = run.assert_error("clawc::config::unknown_key", "unknown key `imgaes` in ../clawc.toml");
    assert_eq!((d["file"].as_str(), d["line"].as_u64(), d["column"].as_u64()), (Some("../clawc.toml"), Some(3), Some(1)));
    assert_eq!(d["help"], "did you mean `images`?");
    assert!(r.nothing_written());
    // Every command that reads the file refuses it the same way.
    for args in [
        vec!["compile", "deploy/claw-pod.yml", "--check"],
        vec!["explain", "deploy/claw-pod.yml", "bot"],
        vec!["who-can", "deploy/claw-pod.yml", "api"],
        vec!["report", "deploy/claw-pod.yml", "--matrix"],
        vec!["describe", "deploy/claw-pod.yml", "api"],
        vec!["compat", "svc/api.json", "svc/api.json", "--pod", "deploy/claw-pod.yml"],
        vec!["config", "deploy/claw-pod.yml"],
    ] {
        let run = r.run("repo", &args, &[]);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains("clawc::config::unknown_key") && run.stderr.contains("did you mean `images`?"),
            "{args:?}: {}",
            run.stderr
        );
    }
    // A snake_case flag name is the likeliest slip.
    r.write("repo/clawc.toml", "env_file = \".env\"\n");
    assert_eq!(r.compile(&[]).assert_error("clawc::config::unknown_key", "env_file")["help"], "did you mean `env-file`?");
    assert!(r.nothing_written());
}

#[test]
fn bad_values_syntax_and_command_line_only_keys() {
    let r = Repo::new();
    for (text, code, part, line) in [
        ("image-jobs = \"eight\"\n", "clawc::config::bad_value", "`image-jobs` in ../clawc.toml must be an integer from 1 to 256", 1),
        ("strict = \"yes\"\n", "clawc::config::bad_value", "`strict` in ../clawc.toml must be `true` or `false`", 1),
        ("images = [\"none\", \"docker\"]\n", "clawc::config::bad_value", "`none` alone", 1),
        ("images = \"nfs:x\"\n", "clawc::config::bad_value", "\"nfs:x\" is not one", 1),
        ("\nrunner = \"bot=codx\"\n", "clawc::config::bad_value", "did you mean `codex`?", 2),
        ("descriptor = [\"api=a.json\", \"api=b.json\"]\n", "clawc::config::bad_value", "names service \"api\" twice", 1),
        ("out = 3\n", "clawc::config::bad_value", "`out` in ../clawc.toml must be a string (a path)", 1),
        ("[images]\nsource = \"none\"\n", "clawc::config::bad_value", "must be a string or a list of strings", 1),
        ("images = \"none\"\nimages = \"docker\"\n", "clawc::config::syntax", "is not valid TOML", 2),
        ("images = [\n", "clawc::config::syntax", "is not valid TOML", 1),
        ("secrets = \"inline\"\n", "clawc::config::not_settable", "`secrets` cannot be set in ../clawc.toml", 1),
        ("format = \"json\"\n", "clawc::config::not_settable", "`format` cannot be set", 1),
    ] {
        r.write("repo/clawc.toml", text);
        let run = r.compile(&[]);
        assert_eq!(run.code, 2, "{text:?}: {}", run.stdout);
        let d = run.assert_error(code, part);
        assert_eq!((d["file"].as_str(), d["line"].as_u64()), (Some("../clawc.toml"), Some(line)), "{text:?}: {d}");
        assert!(r.nothing_written(), "{text:?}");
        let last: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
        assert_eq!(last["summary"]["exit_code"], 2, "the JSON summary says the exit code");
    }
    // CLAWC_IMAGES is checked as the flag would be, and named.
    std::fs::remove_file(r.path("repo/clawc.toml")).unwrap();
    let run = r.run("repo", &["compile", "deploy/claw-pod.yml", "--format", "json"], &[("CLAWC_IMAGES", "dockr")]);
    assert_eq!(run.code, 2);
    run.assert_error("clawc::config::bad_value", "CLAWC_IMAGES=dockr: expected auto, docker, none");
    assert!(r.nothing_written());
}

#[test]
fn a_hostile_file_is_refused_before_anything_is_read_through_it() {
    let r = Repo::new();
    r.write("secret.env", "TOKEN=outside\n");
    // Paths must stay inside the repository: a write outside it, a read outside it, a
    // root that widens it.
    for (text, key) in [
        ("out = \"../../elsewhere\"\n", "out"),
        ("env-file = \"../secret.env\"\n", "env-file"),
        ("descriptor = \"api=/etc/hostname\"\n", "descriptor"),
        ("images = \"oci:/var/lib\"\n", "images"),
        ("root = \"..\"\n", "root"),
    ] {
        r.write("repo/clawc.toml", text);
        let run = r.compile(&[]);
        assert_eq!(run.code, 2, "{text}");
        let d = run.assert_error("clawc::source::path_escape", &format!("`{key}` in ../clawc.toml resolves outside"));
        assert_eq!(d["line"], 1);
        assert!(r.nothing_written() && !r.path("elsewhere").exists(), "{text}");
    }
    // So must a symlink in the way.
    std::os::unix::fs::symlink(r.path("secret.env"), r.path("repo/link.env")).unwrap();
    r.write("repo/clawc.toml", "env-file = \"link.env\"\n");
    r.compile(&[]).assert_error("clawc::source::path_escape", "`env-file`");
    // The file itself: a symlink leading out, a FIFO (never opened for reading, so
    // nothing hangs), a directory, a file over 64 KiB, bytes that are not UTF-8.
    std::fs::remove_file(r.path("repo/clawc.toml")).unwrap();
    r.write("outside.toml", "images = \"none\"\n");
    std::os::unix::fs::symlink(r.path("outside.toml"), r.path("repo/clawc.toml")).unwrap();
    r.compile(&[]).assert_error("clawc::source::path_escape", "`../clawc.toml` resolves outside the input root");
    std::fs::remove_file(r.path("repo/clawc.toml")).unwrap();
    let c = std::ffi::CString::new(r.path("repo/clawc.toml").as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    r.compile(&[]).assert_error("clawc::source::not_a_file", "`../clawc.toml` is a FIFO");
    std::fs::remove_file(r.path("repo/clawc.toml")).unwrap();
    std::fs::create_dir(r.path("repo/clawc.toml")).unwrap();
    r.compile(&[]).assert_error("clawc::source::not_a_file", "is a directory");
    std::fs::remove_dir(r.path("repo/clawc.toml")).unwrap();
    r.write("repo/clawc.toml", &format!("# {}\n", "x".repeat(70_000)));
    r.compile(&[]).assert_error("clawc::source::too_large", "the limit is 65536");
    std::fs::write(r.path("repo/clawc.toml"), b"images = \"\xff\"\n").unwrap();
    r.compile(&[]).assert_error("clawc::source::not_utf8", "../clawc.toml");
    // Control characters never reach the terminal.
    r.write("repo/clawc.toml", "\"\\u001b[31mred\" = 1\n");
    let run = r.run("repo", &["compile", "deploy/claw-pod.yml"], &[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("clawc::config::unknown_key") && !run.stderr.contains("\u{1b}[31mred"), "{}", run.stderr);
    assert!(r.nothing_written());
}

#[test]
fn an_explicit_config_file_is_the_operators() {
    let r = Repo::new();
    r.write("repo/clawc.toml", "broken = [\n");
    // Anywhere, with paths relative to it and allowed to leave the repository.
    r.write("ops/clawc.toml", "images = \"none\"\ndescriptor = \"api=../repo/svc/api.json\"\nout = \"../compiled\"\n");
    let run = r.compile(&["--config", "../ops/clawc.toml"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(r.path("compiled/context/bot/tools.json").exists());
    let missing = r.compile(&["--config", "nope.toml"]);
    assert_eq!(missing.code, 2);
    missing.assert_error("clawc::source::missing_file", "--config `nope.toml` does not exist");
    // --no-config skips the broken file; both at once is a command-line error.
    assert_eq!(r.compile(&["--no-config", "--images", "none", "--descriptor", "api=svc/api.json"]).code, 0);
    let both = r.compile(&["--no-config", "--config", "x.toml"]);
    assert_eq!(both.code, 2);
    assert!(both.stderr.contains("cannot be used with"), "{}", both.stderr);
}

#[test]
fn settings_given_on_the_command_line_are_named_as_given() {
    let r = Repo::new();
    // A --descriptor path is read relative to the current directory, and shown so.
    let run = r.compile(&["--images", "none", "--descriptor", "api=svc/api.json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    std::fs::remove_dir_all(r.path("repo/deploy/.claw-compiled")).unwrap();
    let run = r.run("repo", &["describe", "deploy/claw-pod.yml", "api", "--images", "none", "--descriptor", "api=svc/api.json"], &[]);
    assert!(run.stdout.contains("version 2, from the command-line `svc/api.json`"), "shown as it was read: {}", run.stdout);
    for (args, code, message, help) in [
        (
            vec!["--descriptor", "api=svc/nope.json"],
            "clawc::source::missing_file",
            "--descriptor api=svc/nope.json: the descriptor file does not exist",
            "relative to the current directory",
        ),
        (
            vec!["--descriptor", "apx=svc/api.json"],
            "clawc::source::unknown_service",
            "--descriptor apx=svc/api.json names \"apx\"",
            "did you mean `api`?",
        ),
        (
            vec!["--env-file", "nope.env"],
            "clawc::source::missing_file",
            "--env-file nope.env: the file does not exist",
            "relative to the current directory",
        ),
        (vec!["--root", "nowhere"], "clawc::source::missing_file", "--root nowhere: ", "relative to the current directory"),
    ] {
        let mut all = vec!["--images", "none"];
        all.extend(args);
        let run = r.compile(&all);
        assert_eq!(run.code, 2, "{all:?}");
        let d = run.assert_error(code, message);
        assert!(d["help"].as_str().unwrap().contains(help), "{d}");
        assert!(d.get("file").is_none(), "there is no file to point at: {d}");
        assert!(r.nothing_written());
    }
    // From clawc.toml, the same problems point at the line that set them.
    r.write("repo/clawc.toml", "images = \"none\"\nenv-file = \"nope.env\"\ndescriptor = [\"apx=svc/api.json\"]\n");
    let run = r.compile(&[]);
    let d = run.assert_error("clawc::source::missing_file", "env-file = \"nope.env\" in ../clawc.toml");
    assert_eq!((d["line"].as_u64(), d["column"].as_u64()), (Some(2), Some(12)));
    assert!(d["help"].as_str().unwrap().contains("relative to the file's directory"), "{d}");
    let d = run.assert_error("clawc::source::unknown_service", "descriptor = \"apx=svc/api.json\" in ../clawc.toml");
    assert_eq!(d["line"], 3);
    assert!(r.nothing_written());
}

/// A pod with one warning (an x-claw key no grammar knows).
fn warning_repo() -> Repo {
    let r = Repo::new();
    r.write("repo/deploy/claw-pod.yml", &POD.replace("tools: [api]\n", "tools: [api]\n      agnet: 1\n"));
    r.write("repo/clawc.toml", "images = \"none\"\ndescriptor = \"api=svc/api.json\"\n");
    r
}

#[test]
fn strict_makes_every_warning_an_error_with_its_code() {
    let r = warning_repo();
    let run = r.compile(&["--strict"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    let d = run.assert_error("clawc::pod::unknown_key", "(a warning, made an error by --strict)");
    assert_eq!(d["severity"], "error");
    assert!(r.nothing_written());
    // From the file, the message says which line asked for it; --strict=false wins.
    r.write("repo/clawc.toml", "images = \"none\"\ndescriptor = \"api=svc/api.json\"\nstrict = true\n");
    let run = r.compile(&[]);
    assert_eq!(run.code, 2);
    run.assert_error("clawc::pod::unknown_key", "made an error by `strict = true` at ../clawc.toml:3");
    assert!(r.nothing_written());
    let run = r.compile(&["--strict=false"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.diagnostics()[0]["severity"], "warning");
    // The questions and the check refuse too.
    for args in [
        vec!["explain", "deploy/claw-pod.yml", "bot"],
        vec!["who-can", "deploy/claw-pod.yml", "api"],
        vec!["report", "deploy/claw-pod.yml", "--matrix"],
        vec!["compile", "deploy/claw-pod.yml", "--check"],
    ] {
        let run = r.run("repo", &args, &[]);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(flat(&run.stderr).contains("made an error by `strict = true`"), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn strict_exits_2_for_a_warning_whose_code_is_an_environment_failure() {
    // An image nothing uses is missing: a warning (its error form exits 3).
    let r = Repo::new();
    r.write("repo/deploy/claw-pod.yml", &format!("{POD}  extra:\n    image: nothing-here:1\n"));
    let args = ["--images", "auto", "--descriptor", "api=svc/api.json"];
    let env = [("DOCKER_HOST", "unix:///nonexistent/docker.sock")];
    let run = r.run("repo", &[&["compile", "deploy/claw-pod.yml", "--format", "json"][..], &args].concat(), &env);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.codes().contains(&"clawc::image::not_found".to_string()));
    std::fs::remove_dir_all(r.path("repo/deploy/.claw-compiled")).unwrap();
    let run = r.run("repo", &[&["compile", "deploy/claw-pod.yml", "--format", "json", "--strict"][..], &args].concat(), &env);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert_eq!(run.assert_error("clawc::image::not_found", "nothing-here:1")["severity"], "error");
    assert!(r.nothing_written());
}

#[test]
fn strict_stops_a_write_that_would_leave_an_edited_file() {
    let r = Repo::new();
    r.write("repo/clawc.toml", "images = \"none\"\ndescriptor = \"api=svc/api.json\"\n");
    assert_eq!(r.compile(&[]).code, 0);
    let out = r.path("repo/deploy/.claw-compiled");
    std::fs::write(out.join("context/bot/CLAWDAPUS.md"), "edited by hand\n").unwrap();
    r.write("repo/deploy/claw-pod.yml", &POD.replace("  bot:", "  robot:"));
    let before = tree(&out);
    let run = r.compile(&["--strict"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    let d = run.assert_error("clawc::output::kept_modified", "made an error by --strict");
    assert_eq!(d["severity"], "error");
    assert_eq!(tree(&out), before, "--strict wrote part of the tree");
    // Without --strict the write goes ahead and keeps the edited file, with the warning.
    let run = r.compile(&[]);
    assert_eq!(run.code, 0);
    assert_eq!(run.assert_error("clawc::output::kept_modified", "context/bot/CLAWDAPUS.md")["severity"], "warning");
    assert!(out.join("context/robot/tools.json").exists());
}

#[test]
fn the_pre_commit_hooks_read_the_file_and_run_when_it_changes() {
    let hooks = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml")).unwrap();
    let mut checked = 0;
    for hook in hooks.split("\n- id: ").skip(1) {
        let field = |name: &str| hook.lines().find_map(|l| l.trim().strip_prefix(&format!("{name}: "))).unwrap().to_string();
        assert!(field("files").contains("|clawc\\.toml)$"), "{} does not run when clawc.toml changes", field("name"));
        if !field("entry").contains("--check") {
            continue;
        }
        // The hook's own command line, in a repository whose settings are only in the file.
        let r = Repo::new();
        r.write("repo/deploy/clawc.toml", "images = \"none\"\ndescriptor = \"api=../svc/api.json\"\n");
        assert_eq!(r.run("repo/deploy", &["compile", "claw-pod.yml"], &[]).code, 0);
        let mut args: Vec<String> = field("entry").split_whitespace().skip(1).map(str::to_string).collect();
        args.extend(field("args").trim_matches(['[', ']']).split(", ").map(str::to_string));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = r.run("repo/deploy", &args, &[]);
        assert_eq!(run.code, 0, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("in sync"), "{}", run.stdout);
        checked += 1;
    }
    assert_eq!(checked, 1, "the clawc-check hook was found");
}

/// Every subcommand's `--help` ends with what its exit codes mean.
#[test]
fn every_command_documents_its_exit_codes() {
    let cli = clawc::cli::command();
    let mut names: Vec<&str> = cli.get_subcommands().map(clap::Command::get_name).collect();
    assert!(names.len() >= 9, "{names:?}");
    names.push("");
    for name in names {
        let args: Vec<&str> = [name, "--help"].into_iter().filter(|a| !a.is_empty()).collect();
        let o = clawc().args(&args).output().unwrap();
        let help = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        let footer = help.split("Exit codes").nth(1).unwrap_or_else(|| panic!("clawc {name} --help has no exit codes:\n{help}"));
        assert!(footer.contains("0 ") && footer.contains("2 "), "clawc {name}: {footer}");
        if !["merge", "explain-code"].contains(&name) {
            assert!(footer.contains("3 "), "clawc {name}: {footer}");
        }
    }
    let compile = flat(&String::from_utf8(clawc().args(["compile", "--help"]).output().unwrap().stdout).unwrap());
    assert!(compile.contains("1 --check only: drift"), "{compile}");
    assert!(compile.contains("unreachable with --images docker"), "Docker unreachable is exit 3 only with --images docker: {compile}");
}

/// A pod whose grants sit on lines of different widths (6 and 12), with a tool name
/// that is not ASCII.
fn aligned_repo() -> Repo {
    let r = Repo::new();
    r.write(
        "repo/deploy/claw-pod.yml",
        "services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools:\n        - service: api\n          allow: [a]\n\n\n\n\n\n        - service: other\n          allow: all\n  api:\n    image: api:1\n  other:\n    image: other:1\n",
    );
    r.write("repo/svc/other.json", &http_descriptor(&["grüße_senden"]));
    r.write("repo/clawc.toml", "images = \"none\"\ndescriptor = [\"api=svc/api.json\", \"other=svc/other.json\"]\n");
    r
}

/// The display column where `needle` starts on `line`.
fn column(line: &str, needle: &str) -> usize {
    line[..line.find(needle).unwrap_or_else(|| panic!("{needle} not in {line}"))].chars().count()
}

#[test]
fn explain_and_who_can_align_their_columns() {
    let r = aligned_repo();
    let run = r.run("repo", &["explain", "deploy/claw-pod.yml", "bot"], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().skip(1).collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    let at: Vec<(usize, usize)> = lines.iter().map(|l| (column(l, "claw-pod.yml:"), column(l, "the agent's own"))).collect();
    assert_eq!(at[0], at[1], "columns differ:\n{}", run.stdout);
    let run = r.run("repo", &["who-can", "deploy/claw-pod.yml", "other"], &[]);
    let run2 = r.run("repo", &["who-can", "deploy/claw-pod.yml", "api"], &[]);
    assert_eq!((run.code, run2.code), (0, 0));
    assert!(run.stdout.starts_with("bot  other.grüße_senden  claw-pod.yml:13:11  "), "{}", run.stdout);
    let run = r.run("repo", &["explain", "deploy/claw-pod.yml", "bot", "api.a"], &[]);
    let steps: Vec<usize> = run.stdout.lines().skip(1).map(|l| column(l, l.split_whitespace().nth(2).unwrap())).collect();
    assert!(steps.windows(2).all(|w| w[0] == w[1]), "{}", run.stdout);
}

#[test]
fn markdown_is_a_format_of_its_own() {
    let r = aligned_repo();
    let run = r.run("repo", &["report", "deploy/claw-pod.yml", "--matrix", "--markdown", "--format", "json"], &[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("'--markdown' cannot be used with '--format <FORMAT>'"), "{}", run.stderr);
    let run = r.run("repo", &["report", "deploy/claw-pod.yml", "--matrix", "--markdown"], &[]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.starts_with("| tool | effect | bot (cllama) |"), "{}", run.stdout);
}
