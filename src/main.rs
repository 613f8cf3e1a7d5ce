//! The `clawc` binary: parse the command line, run, exit with the command's code.

// Compiling and `compat` build many small JSON trees and maps; mimalloc halves the time
// glibc's allocator spends on them (benches/compat.rs, docs/performance.md). It is built
// without transparent huge pages (Cargo.toml: `no_thp`): a 2 MB page half used is 2 MB
// resident, which put a big pod's peak a quarter above its heap.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Die quietly on a closed pipe (`clawc … | head`) like other Unix tools, instead of
    // panicking in `println!`.
    #[cfg(unix)]
    // SAFETY: resetting a signal disposition to its default at startup, before any
    // threads exist, has no memory-safety implications.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let code = clawc::cli::run();
    // Leave without the C runtime's exit handlers once what Rust buffers is flushed:
    // mimalloc's handler walks the whole heap to release it (a `madvise` per region),
    // which the kernel does anyway when the process ends, and a `compile --check` in a
    // pre-commit hook is mostly starting and ending a process. Files are all closed by
    // now; nothing registers its own handler.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // SAFETY: `_exit` only ends the process; no Rust code runs after it.
    unsafe { libc::_exit(code) }
}
