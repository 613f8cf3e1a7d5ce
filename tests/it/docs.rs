//! The documentation's commands, run as written (as rustdoc runs doc examples): the
//! README's first command, every `clawc` command of the CI recipes in `docs/ci.md`, and
//! the commands in the examples' comments. Each runs through `sh` with the `clawc` built
//! for this test first on `PATH` (`cargo run [--release] --` is that same binary), in a
//! git repository holding a copy of the repository's examples, with the trading-desk
//! example also at `deploy/` (the recipes' pod), its compiled tree committed, as a
//! user's repository would have it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The fenced code blocks of a Markdown text: (info string, lines).
fn blocks(md: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut open: Option<(String, Vec<String>)> = None;
    for line in md.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), Vec::new())),
            (Some(_), Some(_)) => out.push(open.take().expect("open block")),
            (Some((_, lines)), None) => lines.push(line.to_string()),
            (None, None) => {}
        }
    }
    out
}

/// A command line without its trailing `# comment`.
fn command(line: &str) -> String {
    line.split(" # ").next().unwrap_or(line).trim().to_string()
}

/// A synopsis rather than a command: placeholders (`POD`, `[--diff …]`, `<args>`).
fn is_synopsis(cmd: &str) -> bool {
    cmd.contains('[')
        || cmd.contains('<')
        || cmd.split_whitespace().any(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase() || c == '.'))
}

/// The `clawc` commands of `docs/ci.md`'s recipes: `run:` steps and `script:` items of
/// YAML blocks, and each pre-commit hook as pre-commit runs it (the hook's `entry` from
/// `.pre-commit-hooks.yaml` followed by the recipe's `args`).
fn ci_commands() -> Vec<String> {
    let hooks: serde_json::Value = yaml_hooks();
    let mut out = Vec::new();
    for (info, lines) in blocks(&read("docs/ci.md")) {
        if info != "yaml" {
            continue;
        }
        let mut hook: Option<String> = None;
        for line in &lines {
            let t = line.trim();
            let step = t.strip_prefix("- ").unwrap_or(t);
            let step = step.strip_prefix("run: ").unwrap_or(step);
            if step.starts_with("clawc ") {
                out.push(command(step));
            }
            if let Some(id) = t.strip_prefix("- id: ") {
                let id = command(id);
                let entry = hooks.as_array().into_iter().flatten().find(|h| h["id"] == id.as_str());
                let entry = entry.unwrap_or_else(|| panic!("docs/ci.md uses hook `{id}`, which .pre-commit-hooks.yaml does not define"));
                hook = Some(entry["entry"].as_str().expect("hook entry").to_string());
            }
            if let (Some(entry), Some(args)) = (&hook, t.strip_prefix("args: [")) {
                let args = args.trim_end_matches(']').split(',').map(str::trim).collect::<Vec<_>>().join(" ");
                out.push(format!("{entry} {args}"));
                hook = None;
            }
        }
    }
    out
}

/// `.pre-commit-hooks.yaml` as JSON (each hook's `id` and `entry`; the file is flat YAML).
fn yaml_hooks() -> serde_json::Value {
    let mut hooks = Vec::new();
    for line in read(".pre-commit-hooks.yaml").lines() {
        if let Some(id) = line.strip_prefix("- id: ") {
            hooks.push(serde_json::json!({ "id": id.trim() }));
        } else if let (Some(h), Some(entry)) = (hooks.last_mut(), line.trim().strip_prefix("entry: ")) {
            h["entry"] = entry.trim().into();
        }
    }
    serde_json::Value::Array(hooks)
}

/// The commands in the examples' comments (`#   cargo run … -- compile …`).
fn example_commands() -> Vec<String> {
    let mut out = Vec::new();
    for pod in ["examples/minimal/claw-pod.yml", "examples/trading-desk/claw-pod.yml"] {
        for line in read(pod).lines() {
            let Some(c) = line.strip_prefix('#').map(str::trim) else { continue };
            if c.starts_with("cargo run") || c.starts_with("clawc ") {
                out.push(command(c));
            }
        }
    }
    out
}

/// The README's first fenced block: the two commands a newcomer runs first.
fn readme_first() -> Vec<String> {
    let (_, lines) = blocks(&read("README.md")).into_iter().next().expect("README has a code block");
    lines.iter().map(|l| command(l)).filter(|c| !c.is_empty()).collect()
}

/// `cargo run [--release] [--quiet] -- ARGS` → `clawc ARGS` (the binary under test).
fn as_clawc(cmd: &str) -> String {
    match cmd.split_once(" -- ") {
        Some((cargo, args)) if cargo.starts_with("cargo run") => format!("clawc {args}"),
        _ => cmd.to_string(),
    }
}

/// A user's repository: the examples (tracked files only) at their paths and the
/// trading-desk example at `deploy/`, its tree compiled and committed.
fn user_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files = Command::new("git").args(["ls-files", "-z", "examples"]).current_dir(repo()).output().unwrap();
    assert!(files.status.success(), "git ls-files failed");
    for f in String::from_utf8(files.stdout).unwrap().split('\0').filter(|f| !f.is_empty()) {
        let rel = Path::new(f);
        for to in [Some(rel.to_path_buf()), rel.strip_prefix("examples/trading-desk").ok().map(|r| Path::new("deploy").join(r))]
            .into_iter()
            .flatten()
        {
            std::fs::create_dir_all(dir.path().join(&to).parent().unwrap()).unwrap();
            std::fs::copy(repo().join(rel), dir.path().join(&to)).unwrap();
        }
    }
    git(dir.path(), &["init", "-q"]);
    let compiled = sh(dir.path(), "clawc compile deploy/claw-pod.yml");
    assert_eq!(compiled.0, 0, "compiling deploy/claw-pod.yml: {}", compiled.1);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "pod"]);
    dir
}

fn git(dir: &Path, args: &[&str]) {
    let s = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(s.success(), "git {args:?}");
}

/// Runs `cmd` through `sh` in `dir`: exit code and stdout + stderr.
fn sh(dir: &Path, cmd: &str) -> (i32, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_clawc")).parent().unwrap().to_path_buf();
    let path = std::env::join_paths([bin, PathBuf::from("/usr/bin"), PathBuf::from("/bin")]).unwrap();
    let summary = dir.join("step-summary.md");
    let o = Command::new("sh")
        .args(["-c", cmd])
        .current_dir(dir)
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    (o.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

#[test]
fn the_readme_starts_with_the_example_and_the_test_command() {
    let cmds = readme_first();
    assert_eq!(cmds.len(), 2, "the README's first block holds two commands: {cmds:?}");
    assert!(cmds[0].contains("compile examples/"), "first: compile a bundled example, got {}", cmds[0]);
    assert_eq!(cmds[1], "scripts/test", "second: the test command");
    // CI runs exactly the README's test command.
    assert!(
        read(".ci/run").lines().any(|l| l.trim_start().trim_start_matches("time ").starts_with("scripts/test")),
        ".ci/run must call scripts/test"
    );
    let dir = user_repo();
    let (code, out) = sh(dir.path(), &as_clawc(&cmds[0]));
    assert_eq!(code, 0, "{}\n{out}", cmds[0]);
    assert!(dir.path().join("examples/trading-desk/.claw-compiled/report.json").is_file() || cmds[0].contains("-o"), "{out}");
}

#[test]
fn every_ci_recipe_command_works_as_written() {
    let cmds = ci_commands();
    // The pre-commit hook, the GitHub Actions check and matrix, and the GitLab job.
    assert!(cmds.len() >= 4, "recipes found: {cmds:?}");
    let dir = user_repo();
    for cmd in &cmds {
        assert!(!is_synopsis(cmd), "a recipe has a placeholder: {cmd}");
        let (code, out) = sh(dir.path(), cmd);
        assert_eq!(code, 0, "docs/ci.md: `{cmd}` exited {code}:\n{out}");
    }
    let summary = std::fs::read_to_string(dir.path().join("step-summary.md")).unwrap_or_default();
    assert!(summary.contains("| tool | effect |"), "the matrix step wrote no Markdown table:\n{summary}");
    let check: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("clawc-check.json")).unwrap()).unwrap();
    assert_eq!((check["status"].as_str(), check["exit_code"].as_i64()), (Some("in-sync"), Some(0)), "{check}");
}

#[test]
fn the_recipes_install_this_package() {
    let manifest = read("Cargo.toml");
    assert!(manifest.contains("name = \"clawc\""), "the package is named clawc");
    let installs: Vec<String> =
        blocks(&read("docs/ci.md")).into_iter().flat_map(|(_, lines)| lines).filter(|l| l.contains("cargo install")).collect();
    assert!(!installs.is_empty());
    for l in installs {
        assert!(l.contains("--locked") && l.trim_end().ends_with(" clawc"), "an install line that does not install clawc locked: {l}");
    }
}

#[test]
fn the_examples_comments_commands_work_as_written() {
    let cmds = example_commands();
    assert!(cmds.len() >= 2, "each example says how to compile it: {cmds:?}");
    let dir = user_repo();
    for cmd in &cmds {
        let (code, out) = sh(dir.path(), &as_clawc(cmd));
        assert_eq!(code, 0, "`{cmd}` exited {code}:\n{out}");
    }
}
