//! The `clawc` binary: parse the command line, run, exit with the command's code.
//!
//! `main` is the C runtime's, not Rust's (`no_main`): Rust's start-up reads
//! `/proc/self/maps` to place a guard for the main thread's stack and sets up a signal
//! stack, a tenth of a millisecond that a `compile --check` in a pre-commit hook, mostly a
//! process starting and ending, would pay every commit. What else it does is done here:
//! the standard descriptors are made sure of, and `SIGPIPE` is left at its default. (A
//! stack overflow, which input depth limits rule out, would end in `SIGSEGV` instead of a
//! message.) The arguments are taken from `main`'s own, not from `std::env::args` (which
//! the standard library fills before `main` only with glibc).

// A test build keeps the test harness's `main` (the binary has no tests of its own).
#![cfg_attr(not(test), no_main)]

#[cfg(not(test))]
use std::ffi::{CStr, OsStr, c_char, c_int};
#[cfg(not(test))]
use std::os::unix::ffi::OsStrExt;

// mimalloc for compiling, glibc's allocator for `--check` (see `clawc::allocator`).
// mimalloc may back its regions with transparent huge pages: a compile's heap then takes
// about a fifth of the page faults, which made the 3,000-agent one-agent recompile 6–11 %
// faster, for 3–10 MB more peak memory up to 30,000 agent ids (a 2 MB page half used is
// 2 MB resident).
// `MIMALLOC_ALLOW_THP=0` turns them off for a run (docs/performance.md).
#[global_allocator]
static ALLOC: clawc::allocator::Chosen = clawc::allocator::Chosen;

// The libm functions the binary's code calls, in pure Rust (the `libm` crate): with them
// defined here, the link does not need libm, and the dynamic loader does not map it at
// every start. That was 11 page faults and a quarter of a millisecond, a tenth of a no-op
// `compile --check` of a small pod (docs/performance.md). `tests/it/watch.rs` fails when
// another one is called (a debug build calls the most).

/// C's `pow`: minijinja's `**` operator (no template clawc renders uses it).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[unsafe(no_mangle)]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// C's `log2`: num-bigint's parse of a number in a radix (called only in a debug build).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[unsafe(no_mangle)]
pub extern "C" fn log2(x: f64) -> f64 {
    libm::log2(x)
}

#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: the C runtime passes `argc` pointers to NUL-terminated strings in `argv`,
    // which live as long as the process.
    let arg = |i: usize| unsafe { CStr::from_ptr(*argv.add(i)) }.to_bytes();
    let argc = usize::try_from(argc).unwrap_or(0);
    // Nothing has been allocated yet (`choose` changes nothing otherwise).
    clawc::allocator::choose(clawc::allocator::for_args((1..argc).map(arg)));
    standard_descriptors();
    // Die quietly on a closed pipe (`clawc … | head`) like other Unix tools, instead of
    // panicking in `println!`.
    // SAFETY: resetting a signal disposition to its default at startup, before any
    // threads exist, has no memory-safety implications.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let code = clawc::cli::run((0..argc).map(|i| OsStr::from_bytes(arg(i)).to_owned()));
    // Leave without the C runtime's exit handlers once what Rust buffers is flushed:
    // mimalloc's handler walks the whole heap to release it (a `madvise` per region),
    // which the kernel does anyway when the process ends. Files are all closed by now;
    // nothing registers its own handler.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // SAFETY: `_exit` only ends the process; no Rust code runs after it.
    unsafe { libc::_exit(code) }
}

/// Opens `/dev/null` on any of descriptors 0–2 that is closed, as Rust's own start-up
/// does: otherwise the first file clawc opens would take that number, and what it prints
/// would be written into it. One `poll` of the three tells which are closed.
#[cfg(not(test))]
fn standard_descriptors() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
    // SAFETY: `fds` is a valid array of three `pollfd`s for the duration of the call.
    while unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } == -1 {
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
    for p in fds.iter().filter(|p| p.revents & libc::POLLNVAL != 0) {
        // SAFETY: opening a constant path; the descriptor is meant to stay open for the
        // whole run, in the closed slot's place (the lowest free number).
        let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        if fd != p.fd {
            // SAFETY: ending the process; nothing can be trusted to print.
            unsafe { libc::_exit(libc::EXIT_FAILURE) }
        }
    }
}
