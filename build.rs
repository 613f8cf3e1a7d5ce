//! Links the `clawc` binary as a position-dependent executable on Linux.
//!
//! Why: a PIE binary has its ~28,000 relative relocations applied by the dynamic loader
//! at every start, which copies every page of `.data.rel.ro` (half a megabyte, mostly
//! panic locations and vtables) before `main`. A no-op `compile --check` in a pre-commit
//! hook is mostly process start, and this was about a sixth of it (docs/performance.md).
//! The code is position-independent all the same; only the final link changes. What
//! that gives up (a randomised address for the executable's own image) is in
//! docs/security.md.
//!
//! Left alone: static builds (`crt-static`: `scripts/build-release`'s static-pie, musl),
//! which have no dynamic loader to pay for and would conflict with `-no-pie`, and every
//! other OS.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let static_crt = features.split(',').any(|f| f == "crt-static");
    if os == "linux" && !static_crt {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
