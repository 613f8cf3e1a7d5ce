//! Skills inside a pod compile, by the real binary: operator skills read and copied (files
//! and whole folders, modes kept), confined to the input root and to their folder, merged
//! by name, locked, checked with `--check` and `--strict`, SPEC-0023 resolution against
//! the agent's tools, and `explain`'s skill-brought tools. The golden cases
//! `skills-operator`, `err-skills-read` and `err-skills-no-tool` hold the byte-exact outputs.

use super::harness::{Pod, clawc};
use std::os::unix::fs::PermissionsExt;

const SPEC_SKILL: &str = "# Skill: Check Disk\n\n## Purpose\n\nSee free space.\n\n## Tool Discovery\n\n- `mcp__disk__usage`\n- `df`\n\n## Execution\n\nRun it.\n\n## Validation\n\nA number.\n";

fn pod_with(skills: &str) -> Pod {
    Pod::new(&format!("x-claw:\n  pod: p\nservices:\n  agent:\n    build: ./agent\n    x-claw:\n      skills: {skills}\n"))
        .file("agent/Dockerfile", "FROM scratch\nLABEL claw.cli=\"df, git\"\n")
}

#[test]
fn a_skill_folder_is_copied_whole_with_script_modes_kept() {
    let pod = pod_with("[skills/tidy]")
        .file("skills/tidy/SKILL.md", "---\nname: tidy\ndescription: d\n---\n# Tidy\n")
        .file("skills/tidy/references/notes.md", "notes\n")
        .file("skills/tidy/scripts/run.sh", "#!/bin/sh\necho ok\n");
    std::fs::set_permissions(pod.path("skills/tidy/scripts/run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for rel in ["SKILL.md", "references/notes.md", "scripts/run.sh"] {
        let got = std::fs::read(pod.path(&format!("out/context/agent/skills/tidy/{rel}"))).unwrap();
        assert_eq!(got, std::fs::read(pod.path(&format!("skills/tidy/{rel}"))).unwrap(), "{rel}");
    }
    let mode = |rel: &str| std::fs::metadata(pod.path(rel)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("out/context/agent/skills/tidy/scripts/run.sh"), 0o755);
    assert_eq!(mode("out/context/agent/skills/tidy/SKILL.md"), 0o644);
    // The lock records each file and the folder's listing.
    let lock = pod.read("out/clawc.lock");
    for name in ["skills/tidy/SKILL.md", "skills/tidy/scripts/run.sh", "\"skills/tidy\""] {
        assert!(lock.contains(name), "lock lacks {name}:\n{lock}");
    }
    assert!(lock.contains("skill-folder"), "{lock}");
}

#[test]
fn a_symlink_out_of_a_skill_folder_is_refused_and_nothing_is_written() {
    let pod = pod_with("[skills/leaky]").file("skills/leaky/SKILL.md", "# Leaky\n").file("secret.txt", "do-not-copy\n");
    std::os::unix::fs::symlink(pod.path("secret.txt"), pod.path("skills/leaky/stolen.txt")).unwrap();
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_error("clawc::source::path_escape", "leads out of the skill folder");
    assert!(!run.stdout.contains("do-not-copy"));
    assert!(!pod.out_exists());
}

#[test]
fn a_skill_symlinked_out_of_the_input_root_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.md"), "# Outside\n").unwrap();
    let pod = pod_with("[skills/x.md]");
    std::fs::create_dir_all(pod.path("skills")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("x.md"), pod.path("skills/x.md")).unwrap();
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_error("clawc::source::path_escape", "skills/x.md");
    assert!(!pod.out_exists());
}

#[test]
fn a_fifo_in_a_skill_folder_is_refused_without_hanging() {
    let pod = pod_with("[skills/pipe]").file("skills/pipe/SKILL.md", "# Pipe\n");
    let fifo = std::ffi::CString::new(pod.path("skills/pipe/blocking").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_error("clawc::source::not_a_file", "blocking");
    assert!(!pod.out_exists());
}

#[test]
fn a_broken_skill_fails_check_with_its_diagnostic_and_writes_nothing() {
    let pod = pod_with("[skills/check-disk.md]").file("skills/check-disk.md", SPEC_SKILL);
    assert_eq!(pod.compile(&[]).code, 0);
    let before = super::harness::tree(&pod.path("out"));
    // The CLI the skill fell back to leaves the image: nothing can carry the skill out.
    std::fs::write(pod.path("agent/Dockerfile"), "FROM scratch\nLABEL claw.cli=\"git\"\n").unwrap();
    let run = pod.compile(&["--check"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    let check: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let d = &check["diagnostics"][0];
    assert_eq!(d["code"], "clawc::skill::no_tool", "{check}");
    assert_eq!(d["message"], "agent \"agent\": [skill:check-disk] ERROR: No suitable tool found for Check Disk");
    assert_eq!(d["file"], "skills/check-disk.md");
    assert_eq!(super::harness::tree(&pod.path("out")), before, "--check wrote");
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2);
    assert_eq!(super::harness::tree(&pod.path("out")), before, "a failed compile wrote");
}

#[test]
fn check_sees_a_file_added_to_a_skill_folder() {
    let pod = pod_with("[skills/tidy]").file("skills/tidy/SKILL.md", "# Tidy\n");
    assert_eq!(pod.compile(&[]).code, 0);
    assert_eq!(pod.compile(&["--check"]).code, 0);
    std::fs::write(pod.path("skills/tidy/extra.md"), "more\n").unwrap();
    let run = pod.compile(&["--check"]);
    assert_eq!(run.code, 1, "an added skill file is drift: {}", run.stdout);
    assert!(run.stdout.contains("context/agent/skills/tidy/extra.md"), "{}", run.stdout);
}

#[test]
fn strict_lints_every_markdown_skill_and_plain_ones_pass_without_it() {
    let pod = pod_with("[skills/notes.md]").file("skills/notes.md", "# Notes\n\nPlain Anthropic-style instructions.\n");
    let run = pod.compile(&["--strict"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_error("clawc::skill::missing_section", "skill \"notes\" has no Tool Discovery section");
    assert!(!pod.out_exists());
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(!run.codes().iter().any(|c| c == "clawc::skill::missing_section"), "{}", run.stdout);
}

#[test]
fn the_resolution_follows_the_image_cli_label_and_the_tier_gate() {
    let pod = pod_with("[skills/check-disk.md, skills/restart.md]").file("skills/check-disk.md", SPEC_SKILL).file(
        "skills/restart.md",
        &SPEC_SKILL.replace("Check Disk", "Restart").replace("## Purpose", "## Tier Requirement\n\nTier 3.\n\n## Purpose"),
    );
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let md = pod.read("out/context/agent/CLAWDAPUS.md");
    assert!(md.contains("- [skill:check-disk] WARNING: mcp__disk__usage not found, falling back to df (CLI)"), "{md}");
    assert!(md.contains("- [skill:restart] held back: requires tier 3; this agent is tier 1"), "{md}");
    assert!(!pod.path("out/context/agent/skills/restart.md").exists(), "a held-back skill is not written");
    let report: serde_json::Value = serde_json::from_str(&pod.read("out/report/agent.json")).unwrap();
    let skills = &report["skills"];
    assert_eq!(skills[0]["resolution"]["outcome"], "fallback");
    assert_eq!(skills[0]["resolution"]["kind"], "CLI");
    assert_eq!(skills[1]["held_back"], "requires tier 3; this agent is tier 1 (escalate to a tier 3 agent)");
    assert!(skills[1].get("path").is_none());

    // At tier 3 the skill is written and resolved like any other.
    let pod3 = Pod::new(
        &std::fs::read_to_string(pod.path("claw-pod.yml"))
            .unwrap()
            .replace("    build: ./agent\n", "    build: ./agent\n    environment:\n      CLAUDEOPS_TIER: \"3\"\n"),
    );
    for rel in ["agent/Dockerfile", "skills/check-disk.md", "skills/restart.md"] {
        let p = pod3.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(pod.path(rel), p).unwrap();
    }
    assert_eq!(pod3.compile(&[]).code, 0);
    assert!(pod3.read("out/context/agent/CLAWDAPUS.md").contains("- [skill:restart] WARNING: mcp__disk__usage not found"));
    assert!(pod3.path("out/context/agent/skills/restart.md").exists());
}

#[test]
fn explain_lists_the_tools_a_skill_brings_and_what_shadows_them() {
    let pod = pod_with("[skills/weather]").file("skills/weather/SKILL.md", "---\nname: weather\ndescription: d\n---\n# Weather\n").file(
        "skills/weather/tools.json",
        r#"[{"name": "get_weather", "description": "Weather", "parameters": {"city": {"type": "string", "description": "c"}}}]"#,
    );
    assert_eq!(pod.compile(&[]).code, 0);
    let o = clawc().current_dir(pod.dir.path()).args(["explain", "claw-pod.yml", "agent", "--format", "json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["skill_tools"][0]["tool"], "get_weather");
    assert_eq!(v["skill_tools"][0]["skill"], "weather");
    assert_eq!(v["skill_tools"][0]["kind"], "skill-tools");
    assert!(v["skill_tools"][0]["shadowed_by"].is_null());
    let o = clawc().current_dir(pod.dir.path()).args(["explain", "claw-pod.yml", "agent"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("agent's skills bring 1 tool:") && text.contains("get_weather") && text.contains("skill weather (skills/weather)"),
        "{text}"
    );
}

#[test]
fn two_descriptor_skills_of_one_name_no_longer_overwrite_each_other_silently() {
    let descriptor = |skill: &str| format!("{{\"version\": 2, \"skill\": \"{skill}\"}}");
    let pod = Pod::new(
        "x-claw:\n  pod: p\nservices:\n  crm:\n    build: ./crm\n  billing:\n    build: ./billing\n  agent:\n    image: a\n    x-claw:\n      surfaces: [service://crm, service://billing]\n",
    )
    .file("crm/.claw-describe.json", &descriptor("docs/api.md"))
    .file("crm/docs/api.md", "# CRM API\n")
    .file("billing/.claw-describe.json", &descriptor("api.md"))
    .file("billing/api.md", "# Billing API\n");
    let run = pod.compile(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let d = run.diagnostics().into_iter().find(|d| d["code"] == "clawc::skill::duplicate_name").expect("a duplicate_name warning");
    assert!(d["message"].as_str().unwrap().contains("services \"crm\" and \"billing\" are both named \"api.md\""), "{d}");
    assert_eq!(pod.read("out/context/agent/skills/api.md"), "# Billing API\n");
    let report: serde_json::Value = serde_json::from_str(&pod.read("out/report/agent.json")).unwrap();
    let skills = report["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0]["replaces"][0]["service"], "crm");
}

#[test]
fn the_skills_of_a_pod_are_bounded_in_bytes_together() {
    // Three folders of 96 MiB each (sparse files: nothing is written to disk) are each
    // within a folder's bound, and over the pod's.
    let pod = pod_with("[skills/a, skills/b, skills/c]");
    for name in ["a", "b", "c"] {
        std::fs::create_dir_all(pod.path(&format!("skills/{name}"))).unwrap();
        std::fs::write(pod.path(&format!("skills/{name}/SKILL.md")), format!("# {name}\n")).unwrap();
        for i in 0..12 {
            let f = std::fs::File::create(pod.path(&format!("skills/{name}/data-{i}.bin"))).unwrap();
            f.set_len(8 << 20).unwrap();
        }
    }
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_error("clawc::skill::too_large", "the pod's skills hold more than 268435456 bytes in all");
    assert!(!pod.out_exists());
}

#[test]
fn a_file_name_the_tree_cannot_hold_is_an_input_error_before_anything_is_written() {
    let pod = pod_with("[skills/odd]").file("skills/odd/SKILL.md", "# Odd\n").file("skills/odd/back\\slash", "x");
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    run.assert_error("clawc::source::invalid_skill_name", "skills/odd/back\\slash");
    assert!(!pod.out_exists());
}

#[test]
fn the_clis_in_an_images_path_join_the_inventory() {
    let pod =
        Pod::new("x-claw:\n  pod: p\nservices:\n  agent:\n    image: example/agent:1\n    x-claw:\n      skills: [skills/check-disk.md]\n")
            .file("skills/check-disk.md", SPEC_SKILL);
    let images = pod.path("images");
    super::harness::oci_layout(
        &images,
        &[("example/agent:1", serde_json::json!({}), &[("usr/bin/df", "#!/bin/sh\n"), ("usr/bin/notes.txt", "not a CLI\n")])],
    );
    let run = pod.compile(&["--images", "oci:images"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        pod.read("out/context/agent/CLAWDAPUS.md")
            .contains("- [skill:check-disk] WARNING: mcp__disk__usage not found, falling back to df (CLI)")
    );
    // Without the image, nothing in the inventory carries the skill out.
    std::fs::remove_dir_all(pod.path("out")).unwrap();
    let run = pod.compile(&["--images", "none"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_error("clawc::skill::no_tool", "[skill:check-disk]");
    assert!(!pod.out_exists());
}

#[test]
fn a_skill_cannot_write_control_characters_into_a_diagnostic() {
    let skill = "# Skill: Evil\u{1b}[2J\n\n## Purpose\n\np\n\n## Tool Discovery\n\n- `evil\u{1b}]0;pwned\u{7}`\n\n## Execution\n\ne\n\n## Validation\n\nv\n";
    let pod = pod_with("[skills/evil.md]").file("skills/evil.md", skill);
    for format in [&["--format", "human"][..], &[][..]] {
        let o = clawc().current_dir(pod.dir.path()).args(["compile", "claw-pod.yml", "-o", "out"]).args(format).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        let all = [o.stdout, o.stderr].concat();
        assert!(!all.contains(&0x1b) && !all.contains(&0x07), "{}", String::from_utf8_lossy(&all));
        assert!(String::from_utf8_lossy(&all).contains("clawc::skill::no_tool"));
    }
    assert!(!pod.out_exists());
}

#[test]
fn a_token_copied_into_a_skill_folder_is_refused_without_printing_it() {
    let token = "tok&skill-secret-0123";
    let desc = super::harness::http_descriptor(&["a"])
        .replace("\"description\":\"svc\"", "\"description\":\"svc\",\"auth\":{\"type\":\"bearer\",\"env\":\"API_TOKEN\"}");
    let pod = Pod::new("services:\n  bot:\n    environment: {API_TOKEN: \"${API_TOKEN}\"}\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n      skills: [skills/leak]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &desc)
        .file(".env", &format!("API_TOKEN='{token}'\n"))
        .file("skills/leak/SKILL.md", "# Leak\n")
        // The token as the Go JSON encoder would write it: an encoded form, in a script.
        .file("skills/leak/scripts/call.sh", "#!/bin/sh\ncurl -H 'Authorization: Bearer tok\\u0026skill-secret-0123'\n");
    let run = pod.compile(&[]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    run.assert_error("clawc::secrets::leak", "context/bot/skills/leak/scripts/call.sh");
    assert!(!pod.out_exists());
    assert!(!run.stdout.contains("skill-secret") && !run.stderr.contains("skill-secret"), "{}", run.stdout);
}
