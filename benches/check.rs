//! No-op `clawc compile --check` on the trading-desk example vs. hashing its input files
//! with `sha256sum` (run: `cargo bench --bench check`; `CLAWC_BIN=path` to measure another
//! build, e.g. `scripts/build-release`'s). Both are spawned as processes,
//! 200 times each; medians are reported.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn copy(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == ".claw-compiled" || name == "expected" {
            continue;
        }
        let dst = to.join(&name);
        if e.path().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut t: Vec<Duration> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[runs / 2]
}

fn main() {
    let quick = !std::env::args().any(|a| a == "--bench");
    let runs = if quick { 3 } else { 200 };
    let dir = tempfile::tempdir().unwrap();
    copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk"), dir.path());
    // CLAWC_BIN measures another build (e.g. the static one from scripts/build-release).
    let bin = std::env::var("CLAWC_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_clawc").to_string());
    let clawc = bin.as_str();
    println!("binary: {clawc}");
    let ok = Command::new(clawc).current_dir(dir.path()).args(["compile", "--images", "none", "-o", "out"]).output().unwrap();
    assert!(ok.status.success());
    let lock: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("out/clawc.lock")).unwrap()).unwrap();
    let inputs: Vec<String> = lock["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| !i["sha256"].is_null())
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect();
    let check = median(runs, || {
        let o = Command::new(clawc)
            .current_dir(dir.path())
            .args(["compile", "--images", "none", "-o", "out", "--check", "--format", "json"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&o.stdout).contains("\"answered_by\": \"lock\""));
    });
    let hash = median(runs, || {
        let o = Command::new("sha256sum").current_dir(dir.path()).args(&inputs).output().unwrap();
        assert!(o.status.success());
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("no-op `clawc compile --check` (trading-desk): median {:.2} ms", ms(check));
    println!("`sha256sum` of its {} input files:          median {:.2} ms", inputs.len(), ms(hash));
    println!("ratio: {:.2}", check.as_secs_f64() / hash.as_secs_f64());
}
