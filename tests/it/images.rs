//! Reading services from container images, against a real Docker Engine and real OCI
//! layouts and `docker save` archives. `scripts/test` starts a private engine and builds
//! the fixtures (tests/images/engine.sh); without them these tests fail under CI=true
//! and skip (saying so) elsewhere. The tests that need no engine always run. (That no
//! temporary container outlives a compile is checked by scripts/test once every test has
//! finished: tests run in parallel, so only then is the engine quiet.)

use super::harness::{Pod, Run, tree};
use std::path::PathBuf;
use std::process::Command;

struct Fixtures {
    host: String,
    images: PathBuf,
}

impl Fixtures {
    fn get(test: &str) -> Option<Fixtures> {
        match (std::env::var("CLAWC_TEST_DOCKER_HOST"), std::env::var("CLAWC_TEST_IMAGES")) {
            (Ok(host), Ok(images)) => Some(Fixtures { host, images: images.into() }),
            _ if std::env::var("CI").as_deref() == Ok("true") => {
                panic!("{test}: no Docker Engine fixtures under CI=true; run scripts/test, which starts one")
            }
            _ => {
                eprintln!("SKIPPED {test}: no Docker Engine (run scripts/test to start a private one)");
                None
            }
        }
    }

    fn oci(&self, dir: &str) -> String {
        format!("oci:{}", self.images.join(dir).display())
    }

    fn archive(&self, file: &str) -> String {
        format!("archive:{}", self.images.join(file).display())
    }

    /// `docker` against the private engine.
    fn docker(&self, args: &[&str]) -> String {
        let o = Command::new("docker").env("DOCKER_HOST", &self.host).args(args).output().expect("the docker CLI");
        assert!(o.status.success(), "docker {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Compiles `pod` reading images from `source`, with the engine and a cache dir.
    fn compile(&self, pod: &Pod, source: &str, cache: Option<&std::path::Path>) -> Run {
        let mut env = vec![("DOCKER_HOST", self.host.clone())];
        let cache_arg = match cache {
            Some(c) => {
                env.push(("CLAWC_CACHE_DIR", c.display().to_string()));
                None
            }
            None => Some("--no-cache"),
        };
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut args = vec!["--images", source];
        args.extend(cache_arg);
        pod.run_with_env(&args, &env)
    }
}

const POD: &str = r#"x-claw:
  pod: fixtures
services:
  desk:
    image: clawc-fixture/agent:1
    environment:
      API_TOKEN: ${API_TOKEN}
    x-claw:
      cllama: passthrough
      tools:
        - service: api
          allow: all
        - research
        - memory-svc
      feeds: [ticks]
      memory:
        service: memory-svc
      surfaces: [service://api, service://layered]
  api:
    image: clawc-fixture/api:1
  research:
    image: clawc-fixture/mcp:1
  memory-svc:
    image: clawc-fixture/both:1
  layered:
    image: clawc-fixture/layered:1
"#;

#[track_caller]
fn ok(run: &Run) {
    assert_eq!(run.code, 0, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
}

#[track_caller]
fn fails(pod: &Pod, run: &Run, exit: i32, code: &str, msg: &str) -> serde_json::Value {
    assert_eq!(run.code, exit, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!pod.out_exists(), "a failed compile wrote output");
    run.assert_error(code, msg)
}

#[test]
fn docker_oci_layout_and_archive_give_the_same_tree() {
    let Some(fx) = Fixtures::get("docker_oci_layout_and_archive_give_the_same_tree") else { return };
    let pods: Vec<Pod> = (0..3).map(|_| Pod::new(POD)).collect();
    let sources = ["docker".to_string(), fx.oci("oci"), fx.archive("good.tar")];
    let mut trees = Vec::new();
    for (pod, source) in pods.iter().zip(&sources) {
        ok(&fx.compile(pod, source, None));
        let mut t = tree(&pod.path("out"));
        // The lock records where images were read from (so --check reads them there
        // again); everything else, the image inputs' hashes included, must agree.
        let mut lock: serde_json::Value = serde_json::from_slice(&t["clawc.lock"]).unwrap();
        let recorded = lock.as_object_mut().unwrap().remove("image_sources");
        assert_eq!(
            recorded.as_ref().and_then(|r| r[0].as_str()).map(|r| r.split(':').next().unwrap_or(r)),
            source.split(':').next(),
            "{lock}"
        );
        t.insert("clawc.lock".into(), serde_json::to_vec(&lock).unwrap());
        trees.push(t);
    }
    assert_eq!(trees[0], trees[1], "docker vs OCI layout");
    assert_eq!(trees[0], trees[2], "docker vs docker-save archive");

    let pod = &pods[0];
    let tools: serde_json::Value = serde_json::from_str(&pod.read("out/context/desk/tools.json")).unwrap();
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    // The labelled descriptor (through a symlink), the converted snapshot, and a
    // descriptor joined with a snapshot, in grant order.
    assert_eq!(
        names,
        ["api.get_quote", "api.place_order", "research.search", "research.summarize", "memory-svc.forget_all", "memory-svc.lookup"]
    );
    let research = &tools["tools"][2];
    assert_eq!(research["execution"]["transport"], "mcp", "{research}");
    assert_eq!(research["execution"]["path"], "/rpc", "claw.mcp.path: {research}");
    assert_eq!(tools["tools"][3]["description"], "MCP tool summarize.");
    let md = pod.read("out/context/desk/CLAWDAPUS.md");
    assert!(md.contains("- **Type:** openclaw"), "claw.type from the agent image:\n{md}");
    assert!(md.contains("new, from the upper layer"), "the upper layer's descriptor wins:\n{md}");
    assert_eq!(pod.read("out/context/desk/skills/quotes.md"), "# Quotes\n\nCall get_quote before place_order.\n");
    assert!(pod.read("out/context/desk/feeds.json").contains("\"ticks\""));
    assert!(pod.read("out/context/desk/memory.json").contains("/recall"));
    let lock = pod.read("out/clawc.lock");
    assert!(lock.contains("clawc-fixture/api:1:/svc/api.claw-describe.json"), "{lock}");
    assert!(lock.contains("clawc-fixture/api:1:/skills/quotes.md"), "{lock}");
}

#[test]
fn a_warm_cache_extracts_nothing() {
    let Some(fx) = Fixtures::get("a_warm_cache_extracts_nothing") else { return };
    let cache = tempfile::tempdir().unwrap();
    let pod = Pod::new(
        "services:\n  bot:\n    image: clawc-fixture/agent:1\n    environment:\n      API_TOKEN: ${API_TOKEN}\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    image: clawc-fixture/cached:1\n",
    );
    // clawc creates its containers from the image ID, so events name the ID.
    let id = fx.docker(&["image", "inspect", "--format", "{{.Id}}", "clawc-fixture/cached:1"]).trim().to_string();
    let creates = |since: &str| {
        let until = format!("{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 1);
        let ev = fx.docker(&[
            "events",
            "--since",
            since,
            "--until",
            &until,
            "--filter",
            "type=container",
            "--filter",
            "event=create",
            "--filter",
            &format!("image={id}"),
            "--format",
            "{{.Action}}",
        ]);
        ev.lines().count()
    };
    let t0 = now_secs();
    ok(&fx.compile(&pod, "docker", Some(cache.path())));
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let t1 = now_secs();
    ok(&fx.compile(&pod, "docker", Some(cache.path())));
    assert_eq!(creates(&t0), 1, "the cold compile extracts through one container per image");
    assert_eq!(creates(&t1), 0, "the warm compile created a container");
    let tools_cold = pod.read("out/context/bot/tools.json");
    // --no-cache reads the image again and gives the same bytes.
    ok(&fx.compile(&pod, "docker", None));
    assert_eq!(pod.read("out/context/bot/tools.json"), tools_cold);
}

fn now_secs() -> String {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs().to_string()
}

/// A pod whose agent uses the tools of `image`'s service.
fn using(image: &str) -> Pod {
    Pod::new(&format!(
        "services:\n  bot:\n    image: clawc-fixture/agent:1\n    x-claw:\n      cllama: passthrough\n      tools: [svc]\n  svc:\n    image: {image}\n"
    ))
}

#[test]
fn bad_files_in_images_are_diagnosed_the_same_way_by_every_source() {
    let Some(fx) = Fixtures::get("bad_files_in_images_are_diagnosed_the_same_way_by_every_source") else { return };
    let cases = [
        ("bad:json", 2, "clawc::describe::invalid_json", "invalid descriptor JSON"),
        ("bad:dir", 2, "clawc::image::not_a_file", "`/dir` (named by claw.describe) is a directory"),
        ("bad:escape", 2, "clawc::image::path_escape", "leads out of the image root (\"../../../../etc/passwd\")"),
        ("bad:big", 2, "clawc::image::too_large", "is 8388609 bytes; the limit is 8388608"),
        ("bad:missing", 2, "clawc::image::file_missing", "`/nope.json` (named by claw.describe) is not in the image"),
        ("collide:1", 2, "clawc::image::tool_collision", "tool \"forget_all\" is declared by both"),
    ];
    for (tag, exit, code, msg) in cases {
        for source in ["docker".to_string(), fx.oci("oci"), fx.archive("all.tar")] {
            let pod = using(&format!("clawc-fixture/{tag}"));
            let run = fx.compile(&pod, &source, None);
            let d = fails(&pod, &run, exit, code, msg);
            if code == "clawc::describe::invalid_json" {
                // The diagnostic names the image and the path inside it, with the line.
                assert_eq!(d["file"], "clawc-fixture/bad:json:/bad.json", "{source}");
                assert_eq!(d["line"], 3, "{source}");
            } else if code != "clawc::image::tool_collision" {
                assert_eq!(d["file"], "claw-pod.yml", "points at the image: line ({source})");
                assert_eq!(d["line"], 8, "{source}");
            }
        }
    }
}

#[test]
fn damaged_layouts_and_archives_are_refused() {
    let Some(fx) = Fixtures::get("damaged_layouts_and_archives_are_refused") else { return };
    let pod = Pod::new(POD);
    let d = fails(&pod, &fx.compile(&pod, &fx.oci("oci-damaged"), None), 2, "clawc::image::corrupt", "does not match its digest");
    assert!(d["help"].as_str().unwrap().contains("skopeo copy"));
    fails(&pod, &fx.compile(&pod, &fx.archive("truncated.tar"), None), 2, "clawc::image::corrupt", "truncated.tar");
    let not_layout = tempfile::tempdir().unwrap();
    let src = format!("oci:{}", not_layout.path().display());
    fails(&pod, &fx.compile(&pod, &src, None), 2, "clawc::image::corrupt", "is not an OCI image layout (no `oci-layout` file)");
    // An archive of several images, none of them the one the pod names.
    let run = fx.compile(&pod, &fx.archive("agent-only.tar"), None);
    let d = fails(&pod, &run, 3, "clawc::image::not_found", "service \"api\": image clawc-fixture/api:1 was not found");
    let msg = d["message"].as_str().unwrap();
    assert!(msg.contains("agent \"desk\" is granted its tools"), "{msg}");
    assert!(msg.contains("holds clawc-fixture/agent:1, clawc-fixture/layered:1"), "{msg}");
}

#[test]
fn sources_are_tried_in_order_and_the_first_that_has_the_image_wins() {
    let Some(fx) = Fixtures::get("sources_are_tried_in_order_and_the_first_that_has_the_image_wins") else { return };
    let pod = Pod::new(POD);
    let list = format!("{},{}", fx.archive("agent-only.tar"), fx.oci("oci"));
    ok(&fx.compile(&pod, &list, None));
    assert!(pod.read("out/context/desk/tools.json").contains("research.search"));
}

// The cases below need no engine.

#[test]
fn docker_required_but_unreachable_exits_3() {
    let pod = using("clawc-fixture/api:1");
    let run = pod.run_with_env(&["--images", "docker"], &[("DOCKER_HOST", "unix:///nonexistent/docker.sock")]);
    let d = fails(&pod, &run, 3, "clawc::image::docker_unreachable", "the Docker Engine at unix:///nonexistent/docker.sock is unreachable");
    assert!(d["help"].as_str().unwrap().contains("DOCKER_HOST"), "{d}");
}

#[test]
fn a_missing_image_is_an_error_only_when_the_pod_uses_it() {
    let env = [("DOCKER_HOST", "unix:///nonexistent/docker.sock")];
    let used = using("example/absent:1");
    let run = used.run_with_env(&["--images", "auto"], &env);
    let d = fails(
        &used,
        &run,
        3,
        "clawc::image::not_found",
        "service \"svc\": image example/absent:1 was not found, and agent \"bot\" is granted its tools",
    );
    assert!(d["message"].as_str().unwrap().contains("unreachable"), "names the sources tried: {d}");
    // The agent's own image: its runner label is read from it.
    fails(
        &used,
        &run,
        3,
        "clawc::image::not_found",
        "service \"bot\": image clawc-fixture/agent:1 was not found, and its runner label claw.type",
    );
    // A described provider and a build-backed agent need no image: warnings only.
    let unused = Pod::new("services:\n  bot:\n    build: ./bot\n    x-claw:\n      cllama: passthrough\n      tools: [svc]\n  svc:\n    image: example/absent:1\n")
        .file("bot/Dockerfile", "FROM scratch\nLABEL claw.type=nanoclaw\n")
        .file("svc.json", &super::harness::http_descriptor(&["ping"]));
    let run = unused.run_with_env(&["--images", "auto", "--descriptor", "svc=svc.json"], &env);
    ok(&run);
    let w: Vec<_> = run.diagnostics().into_iter().filter(|d| d["code"] == "clawc::image::not_found").collect();
    assert_eq!(w.len(), 1, "{}", run.stdout);
    assert_eq!(w[0]["severity"], "warning");
    assert!(unused.read("out/context/bot/CLAWDAPUS.md").contains("- **Type:** nanoclaw"), "claw.type from the Dockerfile");
    // --images none reads nothing and checks nothing.
    let run = used.run_with_env(&["--images", "none"], &env);
    assert_eq!(run.code, 2, "without images the grant cannot resolve: {}", run.stdout);
    assert!(!run.codes().iter().any(|c| c.starts_with("clawc::image::")), "{}", run.stdout);
}

#[test]
fn bad_image_source_arguments_are_usage_errors() {
    let pod = using("x:1");
    for bad in [&["--images", "podman"][..], &["--images", "oci:"], &["--images", "none,docker"]] {
        let run = pod.compile(bad);
        assert_eq!(run.code, 2, "{bad:?}: {}", run.stderr);
        assert!(!pod.out_exists());
    }
}
