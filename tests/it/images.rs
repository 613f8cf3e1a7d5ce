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

/// A layer entry for [`exec_layout`]: path, kind, mode, link target.
type Entry<'a> = (&'a str, tar::EntryType, u32, &'a str);

/// An uncompressed tar layer of empty files, directories and links.
fn exec_layer(entries: &[Entry]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, kind, mode, target) in entries {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(*kind);
        h.set_mode(*mode);
        h.set_mtime(0);
        h.set_size(0);
        match kind {
            tar::EntryType::Symlink | tar::EntryType::Link => b.append_link(&mut h, path, target).unwrap(),
            _ => b.append_data(&mut h, path, &[][..]).unwrap(),
        }
    }
    b.into_inner().unwrap()
}

/// Writes `bytes` as a blob of the layout in `dir`; returns its OCI descriptor.
fn exec_blob(dir: &std::path::Path, media_type: &str, bytes: &[u8]) -> serde_json::Value {
    use sha2::{Digest, Sha256};
    let hex = hex::encode(Sha256::digest(bytes));
    std::fs::write(dir.join("blobs/sha256").join(&hex), bytes).unwrap();
    serde_json::json!({"mediaType": media_type, "digest": format!("sha256:{hex}"), "size": bytes.len()})
}

/// An OCI layout at `dir` of images (reference, config `Env`, layers bottom first; the
/// first layer gzipped, as registries ship them).
fn exec_layout(dir: &std::path::Path, images: &[(&str, serde_json::Value, Vec<Vec<u8>>)]) {
    use serde_json::json;
    use std::io::Write;
    std::fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let mut manifests = Vec::new();
    for (reference, env, layers) in images {
        let mut descriptors = Vec::new();
        for (i, l) in layers.iter().enumerate() {
            descriptors.push(if i == 0 {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(l).unwrap();
                exec_blob(dir, "application/vnd.oci.image.layer.v1.tar+gzip", &gz.finish().unwrap())
            } else {
                exec_blob(dir, "application/vnd.oci.image.layer.v1.tar", l)
            });
        }
        let config = json!({"architecture": "amd64", "os": "linux", "config": {"Env": env, "Labels": {"claw.type": "openclaw"}}});
        let config = exec_blob(dir, "application/vnd.oci.image.config.v1+json", &serde_json::to_vec(&config).unwrap());
        let manifest = json!({"schemaVersion": 2, "config": config, "layers": descriptors});
        let mut manifest = exec_blob(dir, "application/vnd.oci.image.manifest.v1+json", &serde_json::to_vec(&manifest).unwrap());
        manifest["annotations"] = json!({"org.opencontainers.image.ref.name": reference});
        manifests.push(manifest);
    }
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&json!({"schemaVersion": 2, "manifests": manifests})).unwrap()).unwrap();
}

/// The executables of an agent image, as the real fetch path reads an OCI layout: its
/// config's PATH, a merged-/usr symlink, links in PATH directories, whiteouts; kept in
/// the cache with the files, and not told when only labels are wanted.
#[test]
fn an_oci_layout_tells_the_executables_in_the_image_path() {
    use tar::EntryType::{Directory as D, Regular as F, Symlink as L};
    let dir = tempfile::tempdir().unwrap();
    let oci = dir.path().join("oci");
    let base = exec_layer(&[
        ("bin", L, 0o777, "usr/bin"),
        ("usr/", D, 0o755, ""),
        ("usr/bin/", D, 0o755, ""),
        ("usr/bin/gh", F, 0o755, ""),
        ("usr/bin/curl", F, 0o755, ""),
        ("usr/bin/python3", F, 0o755, ""),
        ("usr/bin/README", F, 0o644, ""),
        ("usr/bin/old", F, 0o755, ""),
        ("usr/sbin/useradd", F, 0o750, ""),
        ("usr/local/lib/node_modules/npm/bin/npm-cli.js", F, 0o755, ""),
        ("opt/tools/bin/claw", F, 0o755, ""),
    ]);
    let upper = exec_layer(&[
        ("usr/bin/.wh.old", F, 0o644, ""),
        ("usr/local/bin/python", L, 0o777, "/usr/bin/python3"),
        ("usr/local/bin/npm", L, 0o777, "../lib/node_modules/npm/bin/npm-cli.js"),
        ("usr/local/bin/escape", L, 0o777, "../../../../../usr/bin/gh"),
    ]);
    let layers = vec![base, upper];
    let env = serde_json::json!(["PATH=/nope", "HOME=/root", "PATH=/usr/local/bin:/bin:relative:/opt/tools/bin"]);
    exec_layout(&oci, &[("clawc-test/agent:1", env, layers.clone()), ("clawc-test/default:1", serde_json::json!(null), layers)]);
    let source = format!("oci:{}", oci.display());
    let read = |reference: &str, files: bool, cache: Option<&std::path::Path>| {
        clawc::fuzzing::fetched_executables(&source, reference, files, cache.map(std::path::Path::to_path_buf))
    };
    let names = |v: &[&str]| Some(v.iter().map(|s| (*s).to_string()).collect::<std::collections::BTreeSet<_>>());

    let want = names(&["claw", "curl", "gh", "npm", "python", "python3"]);
    assert_eq!(read("clawc-test/agent:1", true, None), Ok(want.clone()));
    // No PATH in the config: Docker's default (/usr/sbin is in it, /opt/tools/bin is not).
    assert_eq!(read("clawc-test/default:1", true, None), Ok(names(&["curl", "gh", "npm", "python", "python3", "useradd"])));
    // Only labels wanted: the layers are not read.
    assert_eq!(read("clawc-test/agent:1", false, None), Ok(None));

    // Kept in the cache with the files: a warm read needs no layer (they are gone).
    let cache = dir.path().join("cache");
    assert_eq!(read("clawc-test/agent:1", true, Some(&cache)), Ok(want.clone()));
    let gzipped: Vec<std::path::PathBuf> = std::fs::read_dir(oci.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::read(p).unwrap().starts_with(&[0x1f, 0x8b]))
        .collect();
    assert_eq!(gzipped.len(), 1, "the gzipped base layer");
    std::fs::remove_file(&gzipped[0]).unwrap();
    assert_eq!(read("clawc-test/agent:1", true, Some(&cache)), Ok(want));
    let cold = read("clawc-test/agent:1", true, None).unwrap_err();
    assert!(cold.contains("blob"), "without the cache the layer is read: {cold}");
}

#[test]
fn a_label_naming_a_megabyte_long_path_is_answered_at_once() {
    // Two hundred thousand components: looked up ancestor by ancestor, this took memory
    // quadratic in its length.
    let deep = format!("/{}", vec!["d"; 200_000].join("/"));
    let pod = Pod::new(
        "services:\n  tool:\n    image: example/deep:1\n  agent:\n    image: example/deep:1\n    x-claw:\n      surfaces: [service://tool]\n",
    );
    super::harness::oci_layout(&pod.path("images"), &[("example/deep:1", serde_json::json!({ "claw.describe": deep }), &[("x", "x")])]);
    let start = std::time::Instant::now();
    let run = pod.compile(&["--images", "oci:images"]);
    assert!(start.elapsed() < std::time::Duration::from_secs(30), "{:?}", start.elapsed());
    assert!(matches!(run.code, 0 | 2), "{}{}", run.stdout, run.stderr);
}
