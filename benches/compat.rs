//! `clawc compat` on two releases of a service with 500 tools whose input schemas nest 5
//! levels deep (output schemas 3), against three pods of 300 agents each (run: `cargo
//! bench --bench compat`; `CLAWC_BIN=path` to measure another build). The process is
//! spawned as CI spawns it; the median of 50 runs is reported (3 without `--bench`).
//! The target is under 100 ms.

use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};

const TOOLS: usize = 500;
const DEPTH: usize = 5;
const PODS: usize = 3;
/// Agent services per pod, each with `count: 5`: 300 agents.
const SERVICES: usize = 60;

/// A schema `depth` levels deep: each level an object with a nested object, a string and
/// a bounded integer.
fn schema(depth: usize, max: u64) -> Value {
    if depth == 0 {
        return json!({"type": "string", "maxLength": 64});
    }
    json!({
        "type": "object",
        "description": format!("level {depth}"),
        "properties": {
            "nested": schema(depth - 1, max),
            "label": {"type": "string", "pattern": "^[a-z]+$"},
            "count": {"type": "integer", "minimum": 0, "maximum": max},
            "mode": {"enum": ["fast", "safe", "slow"]},
        },
        "required": ["nested", "label"],
    })
}

fn descriptor(release: &str, changed: impl Fn(usize) -> bool, present: impl Fn(usize) -> bool) -> Value {
    let tools: Vec<Value> = (0..TOOLS + 10)
        .filter(|i| present(*i))
        .map(|i| {
            let max = if changed(i) { 50 } else { 100 };
            json!({
                "name": format!("tool_{i:03}"),
                "description": format!("Tool number {i}"),
                "http": {"method": if i % 2 == 0 { "GET" } else { "POST" }, "path": format!("/tools/{i}")},
                "inputSchema": schema(DEPTH, max),
                "outputSchema": schema(3, 100),
                "annotations": {"readOnlyHint": i % 2 == 0},
            })
        })
        .collect();
    json!({"version": 2, "release": release, "description": "A large service", "auth": {"type": "bearer", "env": "BIG_TOKEN"},
        "feeds": [{"name": "ticks", "path": "/ticks", "ttl": 5}], "tools": tools})
}

fn pod(p: usize) -> String {
    let mut y = format!("x-claw:\n  pod: pod{p}\nservices:\n  big:\n    image: big:1\n    x-claw:\n      describe-file: ../new.json\n");
    for s in 0..SERVICES {
        y.push_str(&format!(
            "  agent{s:02}:\n    image: agent:1\n    environment:\n      BIG_TOKEN: x\n    x-claw:\n      count: 5\n      feeds: [ticks]\n"
        ));
        if s % 3 == 0 {
            y.push_str("      tools:\n        - service: big\n          allow: all\n");
        } else {
            let names: Vec<String> = (0..5).map(|k| format!("tool_{:03}", (s * 7 + k * 13) % TOOLS)).collect();
            y.push_str(&format!("      tools:\n        - service: big\n          allow: [{}]\n", names.join(", ")));
        }
    }
    y
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
    let runs = if quick { 3 } else { 50 };
    let dir = tempfile::tempdir().unwrap();
    // CLAWC_BENCH_DIR=path keeps the generated inputs there (to profile by hand).
    let kept = std::env::var_os("CLAWC_BENCH_DIR").map(std::path::PathBuf::from);
    let d = kept.as_deref().unwrap_or(dir.path());
    // NEW: every tenth tool's bounds tightened at every level, five tools removed, five added.
    let old = descriptor("1.0.0", |_| false, |i| i < TOOLS);
    let new = descriptor("2.0.0", |i| i % 10 == 0, |i| (5..TOOLS + 5).contains(&i));
    std::fs::write(d.join("old.json"), serde_json::to_string_pretty(&old).unwrap()).unwrap();
    std::fs::write(d.join("new.json"), serde_json::to_string_pretty(&new).unwrap()).unwrap();
    let mut args = vec!["compat".to_string(), "old.json".into(), "new.json".into(), "--format".into(), "json".into()];
    for p in 0..PODS {
        std::fs::create_dir_all(d.join(format!("p{p}"))).unwrap();
        std::fs::write(d.join(format!("p{p}/claw-pod.yml")), pod(p)).unwrap();
        args.extend(["--pod".to_string(), format!("p{p}/claw-pod.yml")]);
    }
    let bin = std::env::var("CLAWC_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_clawc").to_string());
    println!("binary: {bin}");
    let run = |args: &[String]| Command::new(&bin).current_dir(d).env("CLAWC_IMAGES", "none").args(args).output().unwrap();
    let o = run(&args);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = doc["findings"].as_array().unwrap();
    let agents: usize = findings.iter().map(|f| f["agents"].as_array().map_or(0, Vec::len)).sum();
    println!(
        "{TOOLS} tools × {DEPTH}-deep schemas, {PODS} pods × {} agents: {} findings naming {agents} agents",
        SERVICES * 5,
        findings.len()
    );
    let without = median(runs, || {
        let _ = run(&args[..5]);
    });
    let with = median(runs, || {
        let _ = run(&args);
    });
    // The floor: loading both sides through the describe stage (compile's own decoding
    // and JSON Schema meta-validation of every inputSchema), which compat cannot skip.
    let describe = |f: &str| vec!["describe".to_string(), f.to_string(), "--format".into(), "json".into()];
    let (d_old, d_new) = (describe("old.json"), describe("new.json"));
    let load = median(runs, || {
        let _ = run(&d_old);
        let _ = run(&d_new);
    });
    println!("clawc describe OLD + NEW: {load:?} median of {runs} (the load floor)");
    println!("clawc compat (no pod):    {without:?} median of {runs}");
    println!("clawc compat (3 pods):    {with:?} median of {runs}");
}
