//! Links the `clawc` binary as a position-dependent executable on Linux.
//!
//! Why: a PIE binary has its ~28,000 relative relocations applied by the dynamic loader
//! at every start, which copies every page of `.data.rel.ro` (half a megabyte, mostly
//! panic locations and vtables) before `main`. A no-op `compile --check` in a pre-commit
//! hook is mostly process start, and this was a fifth of it (docs/performance.md). The
//! code is position-independent all the same; only the final link changes.
//!
//! Left alone: static builds (`crt-static`, e.g. `scripts/build-release`'s static-pie or
//! musl), which the loader does not relocate this way, and every other OS.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let static_crt = features.split(',').any(|f| f == "crt-static");
    if os == "linux" && !static_crt {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
