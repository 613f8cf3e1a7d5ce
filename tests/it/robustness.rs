//! No input makes clawc panic: thousands of deterministic random edits of the example's
//! pod and descriptors, each compiled in-process. Every run must end in artifacts or in
//! diagnostics with a code, never in a panic.

use super::harness::tree;
use std::path::Path;

/// A small deterministic PRNG (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const NOISE: &[&str] = &[
    "{", "}", "[", "]", ":", "-", "...", "&a", "*a", "<<", "${", "}", "\"", "'", "\n", "  ", "#", "null", "0", "-1", "é", "\t", ",",
    "!!str ", "|",
];

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut s: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(s.len() + 1);
        match rng.below(3) {
            0 if at < s.len() => {
                let len = 1 + rng.below(8);
                s.drain(at..(at + len).min(s.len()));
            }
            1 => {
                let noise: Vec<char> = NOISE[rng.below(NOISE.len())].chars().collect();
                s.splice(at..at, noise);
            }
            _ => {
                // Duplicate a slice elsewhere: keeps the text plausible.
                let from = rng.below(s.len());
                let len = rng.below(40).min(s.len() - from);
                let piece: Vec<char> = s[from..from + len].to_vec();
                s.splice(at..at, piece);
            }
        }
    }
    s.into_iter().collect()
}

#[test]
fn mutated_inputs_never_panic() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trading-desk");
    let files: Vec<(String, String)> = tree(&example)
        .into_iter()
        .filter(|(rel, _)| !rel.starts_with("expected/") && !rel.starts_with(".claw-compiled/"))
        .map(|(rel, b)| (rel, String::from_utf8(b).unwrap()))
        .collect();
    let targets: Vec<usize> = files
        .iter()
        .enumerate()
        .filter(|(_, (r, _))| r.ends_with(".yml") || r.ends_with(".json") || r.ends_with("Dockerfile"))
        .map(|(i, _)| i)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    // CLAWC_MUTATION_ROUNDS / CLAWC_MUTATION_SEED allow a longer local search.
    let rounds: usize = std::env::var("CLAWC_MUTATION_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let seed: u64 = std::env::var("CLAWC_MUTATION_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut rng = Rng(seed);
    let (mut ok, mut failed) = (0, 0);
    for round in 0..rounds {
        let victim = targets[rng.below(targets.len())];
        let root = dir.path().join(format!("r{round}"));
        for (i, (rel, text)) in files.iter().enumerate() {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let text = if i == victim { mutate(text, &mut rng) } else { text.clone() };
            std::fs::write(p, text).unwrap();
        }
        let opts = clawc::Options { pod: root.join("claw-pod.yml"), ..Default::default() };
        let compiled = std::panic::catch_unwind(|| clawc::compile(&opts))
            .unwrap_or_else(|_| panic!("panic in round {round} mutating {}", files[victim].0));
        if compiled.artifacts.is_some() {
            ok += 1;
        } else {
            failed += 1;
            assert!(compiled.diagnostics.errors().all(|d| d.code.starts_with("clawc::")));
            assert!(compiled.diagnostics.has_errors());
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
    // Both outcomes must occur, or the mutations are not exercising anything.
    assert!(ok > 20 && failed > 20, "ok={ok} failed={failed}");
}
