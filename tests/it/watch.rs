//! `compile --watch`: the real binary left running on a pod while its inputs are edited,
//! each compile's JSON summary read as it is printed. Every wait is bounded, and the
//! watcher is killed if a test fails, so no test can hang.

use super::harness::{Pod, clawc, http_descriptor, tree};
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// A `clawc compile --watch --format json` running on a pod.
struct Watching {
    child: Child,
    lines: Receiver<String>,
}

impl Watching {
    fn start(pod: &Pod, cache: &std::path::Path) -> Watching {
        // An input stamped in the coarse clock tick the first compile began in may have
        // changed after it was read, so that compile is followed by another at once (no
        // watch ran through it to say otherwise): the pod was just written, so let the
        // clock pass it first, or `quiet` after the first summary would fail by chance.
        std::thread::sleep(Duration::from_millis(25));
        let mut child = clawc()
            .current_dir(pod.dir.path())
            .env("CLAWC_CACHE_DIR", cache)
            .args(["compile", "claw-pod.yml", "-o", "out", "--format", "json", "--watch"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (send, lines) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Watching { child, lines }
    }

    /// The next compile's summary (the diagnostics printed before it are skipped).
    #[track_caller]
    fn summary(&self) -> serde_json::Value {
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(60)).expect("a compile within a minute");
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if let Some(s) = v.get("summary") {
                return s.clone();
            }
        }
    }

    /// Nothing more printed for a while.
    fn quiet(&self) -> bool {
        self.lines.recv_timeout(Duration::from_millis(600)).is_err()
    }

    /// SIGINT, then the exit code (within ten seconds).
    fn stop(mut self) -> i32 {
        // SAFETY: signals our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        for _ in 0..100 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("--watch did not stop on SIGINT");
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pod() -> Pod {
    Pod::new("services:\n  bot:\n    x-claw:\n      cllama: passthrough\n      tools: [api]\n  api:\n    build: ./api\n")
        .file("api/.claw-describe.json", &http_descriptor(&["a", "b"]))
}

fn tools(pod: &Pod) -> Vec<String> {
    let tools: serde_json::Value = serde_json::from_str(&pod.read("out/context/bot/tools.json")).unwrap();
    let mut names: Vec<String> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
    names.sort();
    names
}

/// The tree a plain compile of the pod as it is now writes (into `fresh`).
fn fresh_tree(pod: &Pod) -> std::collections::BTreeMap<String, Vec<u8>> {
    let fresh = tempfile::tempdir().unwrap();
    let o = clawc().current_dir(pod.dir.path()).args(["compile", "claw-pod.yml", "-o"]).arg(fresh.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    tree(fresh.path())
}

#[test]
fn each_edit_of_the_pod_or_a_descriptor_is_compiled_and_a_broken_one_leaves_the_tree() {
    let pod = pod();
    let cache = tempfile::tempdir().unwrap();
    let w = Watching::start(&pod, cache.path());
    let first = w.summary();
    assert_eq!(first["status"], "ok", "{first}");
    let all = tools(&pod);
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(w.quiet(), "nothing compiled again without a change");
    // A watch keeps its decoded descriptors in memory, not in the user cache.
    assert!(!cache.path().join("describe").exists());

    // A grant narrowed: compiled again, the tree as a compile of the new pod writes it.
    pod.edit_pod("tools: [api]", "tools: [{service: api, allow: a}]");
    let s = w.summary();
    assert_eq!(s["status"], "ok", "{s}");
    assert_eq!(tools(&pod).len(), 1);
    assert_eq!(tree(&pod.path("out")), fresh_tree(&pod));

    // Put back over more lines (the entries after it move down: the watch parses the
    // edited entry alone into the tree it kept), then on one again.
    pod.edit_pod("tools: [{service: api, allow: a}]", "tools:\n        - service: api\n          allow: [a, b]\n");
    assert_eq!(w.summary()["status"], "ok");
    assert_eq!(tools(&pod).len(), 2);
    assert_eq!(tree(&pod.path("out")), fresh_tree(&pod));
    pod.edit_pod("tools:\n        - service: api\n          allow: [a, b]\n", "tools: [api]");
    assert_eq!(w.summary()["status"], "ok");
    assert_eq!(tools(&pod).len(), 2);

    // A descriptor is an input too.
    std::fs::write(pod.path("api/.claw-describe.json"), http_descriptor(&["a", "b", "c"])).unwrap();
    let s = w.summary();
    assert_eq!(s["status"], "ok", "{s}");
    assert_eq!(tools(&pod).len(), 3, "the descriptor's edit was compiled");

    // A broken pod: the failure is reported, the tree left as it was, and the watch goes on.
    let before = tree(&pod.path("out"));
    pod.edit_pod("tools: [api]", "tools: [{service: api, allow: nope}]");
    let s = w.summary();
    assert_eq!(s["status"], "failed", "{s}");
    assert_eq!(s["exit_code"], 2);
    assert_eq!(tree(&pod.path("out")), before, "a failed compile writes nothing");
    pod.edit_pod("tools: [{service: api, allow: nope}]", "tools: [{service: api, allow: b}]");
    let s = w.summary();
    assert_eq!(s["status"], "ok", "{s}");
    assert_eq!(tools(&pod).len(), 1);
    assert_eq!(tree(&pod.path("out")), fresh_tree(&pod));
    assert_eq!(w.stop(), 0, "stopped after a compile that succeeded: its code");
}

/// A save still being written (the file open, half of it there, for longer than a save's
/// steps take) is not compiled until it is closed: no compile of the half file.
#[test]
fn a_save_still_being_written_is_compiled_once_it_is_closed() {
    use std::io::Write;
    let pod = pod();
    let cache = tempfile::tempdir().unwrap();
    let w = Watching::start(&pod, cache.path());
    assert_eq!(w.summary()["status"], "ok");
    assert!(w.quiet(), "the watch has begun");
    let text = pod.read("claw-pod.yml").replace("tools: [api]", "tools: [{service: api, allow: a}]");
    // Cut inside the flow mapping: the first half alone does not parse.
    let cut = text.find("allow").unwrap();
    let mut file = std::fs::File::create(pod.path("claw-pod.yml")).unwrap();
    file.write_all(&text.as_bytes()[..cut]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    file.write_all(&text.as_bytes()[cut..]).unwrap();
    drop(file);
    let s = w.summary();
    assert_eq!(s["status"], "ok", "the half written file was not compiled: {s}");
    assert_eq!(tools(&pod), ["api.a"]);
    assert!(w.quiet(), "one compile for one save");
    // Saved as editors that write a new file and rename it over the old one: compiled once.
    std::fs::write(pod.path(".claw-pod.yml.new"), text.replace("allow: a", "allow: b")).unwrap();
    std::fs::rename(pod.path(".claw-pod.yml.new"), pod.path("claw-pod.yml")).unwrap();
    assert_eq!(w.summary()["status"], "ok");
    assert_eq!(tools(&pod), ["api.b"]);
    assert!(w.quiet(), "one compile for one save by rename");
    assert_eq!(w.stop(), 0);
}

#[test]
fn an_output_changed_by_hand_while_watching_is_written_again_on_the_next_compile() {
    let pod = pod();
    let cache = tempfile::tempdir().unwrap();
    let w = Watching::start(&pod, cache.path());
    assert_eq!(w.summary()["status"], "ok");
    // Past the record's clock tick, then a compile that changes nothing of the agent's:
    // its record vouches for the agent's files, and the watch looks at them while idle.
    std::thread::sleep(Duration::from_millis(50));
    std::fs::write(pod.path("claw-pod.yml"), pod.read("claw-pod.yml") + "# one\n").unwrap();
    let s = w.summary();
    assert_eq!(s["status"], "ok", "{s}");
    assert_eq!(s["written"].as_array().unwrap().len(), 1, "only the lock: {s}");
    std::thread::sleep(Duration::from_millis(300));
    let path = pod.path("out/context/bot/CLAWDAPUS.md");
    let good = std::fs::read(&path).unwrap();
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let mut forged = good.clone();
    forged[0] ^= 1;
    std::fs::write(&path, &forged).unwrap();
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
    // An edit that changes none of the agent's files: its service would be taken from
    // the tree as it was read while idle, but for the change under --out.
    std::fs::write(pod.path("claw-pod.yml"), pod.read("claw-pod.yml") + "# two\n").unwrap();
    let s = w.summary();
    assert_eq!(s["status"], "ok", "{s}");
    assert!(std::fs::read(&path).unwrap() == good, "the forged file was not taken as it was");
    assert_eq!(tree(&pod.path("out")), fresh_tree(&pod));
    assert_eq!(w.stop(), 0);
}

#[test]
fn a_watch_ends_with_the_last_compiles_code() {
    let pod = Pod::new("services:\n  bot:\n    x-claw:\n      tools: [nowhere]\n");
    let cache = tempfile::tempdir().unwrap();
    let w = Watching::start(&pod, cache.path());
    let s = w.summary();
    assert_eq!(s["status"], "failed", "{s}");
    assert!(!pod.out_exists(), "nothing written");
    assert_eq!(w.stop(), 2);
}

#[test]
fn watch_and_check_cannot_be_combined() {
    let pod = pod();
    let run = pod.compile(&["--watch", "--check"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--check"), "{}", run.stderr);
    assert!(!pod.out_exists());
}

/// Descriptors read by one compile are replayed by later ones while the watch reports
/// nothing on their way; each way of changing one is seen, and every compile writes what
/// a compile of the inputs as they are writes.
#[test]
fn an_input_changed_in_place_through_a_link_or_a_directory_on_its_way_is_read_again() {
    let pod = pod();
    let cache = tempfile::tempdir().unwrap();
    let w = Watching::start(&pod, cache.path());
    assert_eq!(w.summary()["status"], "ok");
    let descriptor = pod.path("api/.claw-describe.json");
    let outside = tempfile::tempdir().unwrap();
    let link = outside.path().join("linked.json");
    std::fs::hard_link(&descriptor, &link).unwrap();
    type Change<'a> = (&'a str, usize, &'a dyn Fn());
    let changes: [Change<'_>; 3] = [
        ("written in place", 3, &|| std::fs::write(&descriptor, http_descriptor(&["a", "b", "c"])).unwrap()),
        ("written through a hard link", 1, &|| std::fs::write(&link, http_descriptor(&["a"])).unwrap()),
        ("its directory replaced", 4, &|| {
            std::fs::rename(pod.path("api"), pod.path("api-old")).unwrap();
            std::fs::create_dir(pod.path("api")).unwrap();
            std::fs::write(pod.path("api/.claw-describe.json"), http_descriptor(&["a", "b", "c", "d"])).unwrap();
        }),
    ];
    let mut comment = 0;
    for (how, tools_after, change) in changes {
        // Two edits of the pod alone: the descriptor is read under a watch, then replayed.
        for _ in 0..2 {
            comment += 1;
            std::fs::write(pod.path("claw-pod.yml"), pod.read("claw-pod.yml") + &format!("# {comment}\n")).unwrap();
            assert_eq!(w.summary()["status"], "ok", "{how}");
        }
        change();
        let s = w.summary();
        assert_eq!(s["status"], "ok", "{how}: {s}");
        assert_eq!(tools(&pod).len(), tools_after, "{how}");
        assert_eq!(tree(&pod.path("out")), fresh_tree(&pod), "{how}");
    }
    assert_eq!(w.stop(), 0);
}

/// The binary maps no libm (src/main.rs defines the few functions of it that clawc
/// calls): a shared library costs every run a quarter of a millisecond to load. A running
/// watch's mappings are its whole process image, loaded libraries included.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_loads_no_libm() {
    let pod = pod();
    let cache = tempfile::tempdir().unwrap();
    let watching = Watching::start(&pod, cache.path());
    assert_eq!(watching.summary()["status"], "ok");
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", watching.child.id())).unwrap();
    let libs: std::collections::BTreeSet<&str> =
        maps.lines().filter_map(|l| l.split_whitespace().nth(5)).filter(|p| p.contains(".so")).collect();
    assert!(libs.iter().any(|l| l.contains("libc.so")), "the maps were read: {libs:?}");
    assert!(!libs.iter().any(|l| l.contains("/libm.so") || l.contains("/libm-")), "libm is loaded: {libs:?}");
}
