//! Lays out the `clawc` binary for a quick start on Linux.
//!
//! A no-op `compile --check` in a pre-commit hook is mostly a process starting, so the
//! link does two things there (docs/performance.md says what each gained):
//!
//! - **Position-dependent** (`-no-pie`): a PIE binary has its ~28,000 relative
//!   relocations applied by the dynamic loader at every start, which copies every page
//!   of `.data.rel.ro` (half a megabyte, mostly panic locations and vtables) before
//!   `main`. The code is position-independent all the same; only the final link changes.
//!   What that gives up (a randomised address for the executable's own image) is in
//!   docs/security.md. Static builds (`crt-static`: `scripts/build-release`'s static-pie,
//!   musl) have no dynamic loader to pay for and would conflict with `-no-pie`.
//! - **The functions a short run enters first, together** (`link/hot-text.ld`, made by
//!   `scripts/hot-text`): otherwise they are spread over 10 MB of code and the kernel
//!   maps each 64 KiB window of it on first touch. The script only adds an output
//!   section before `.text` (`INSERT`), which the GNU and LLVM linkers take; mold and
//!   gold do not, so a build configured to link with either goes without it.
//!
//! Every other OS links as Rust's defaults have it.

use std::env::var;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed={HOT_TEXT}");
    if var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    let features = var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    if !features.split(',').any(|f| f == "crt-static") {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
    let hot_text = std::path::Path::new(&var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(HOT_TEXT);
    // Release builds only: matching the script's patterns adds seconds to a debug link.
    if var("PROFILE").as_deref() == Ok("release") && hot_text.is_file() && takes_linker_scripts() {
        // Two arguments, so a comma in the path is not taken for `-Wl`'s separator.
        println!("cargo::rustc-link-arg-bins=-Xlinker");
        println!("cargo::rustc-link-arg-bins=--script={}", hot_text.display());
    }
}

const HOT_TEXT: &str = "link/hot-text.ld";

/// Whether the configured linker takes a script that `INSERT`s a section: not when the
/// flags or the linker name mold or gold.
fn takes_linker_scripts() -> bool {
    let flags = var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let linker = var("RUSTC_LINKER").unwrap_or_default();
    !["mold", "gold"].iter().any(|l| flags.contains(l) || linker.contains(l))
}
