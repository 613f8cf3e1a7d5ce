//! The process's heap allocator, chosen once per run before anything is allocated.
//!
//! Compiling and `compat` build many small JSON trees and maps on every core, and mimalloc
//! makes them markedly faster than glibc's allocator (`benches/compat.rs`,
//! `docs/performance.md`). But mimalloc costs at start: it sets up its arena and touches a
//! fresh page for each size class it serves, about a fifth of a millisecond, and a no-op
//! `compile --check` in a pre-commit hook is mostly a process starting and ending. So a run
//! asked to `--check` (whose usual answer is the lock's, a few small reads) takes glibc's
//! allocator, and every other run mimalloc. The choice only moves time: either allocator
//! gives the same bytes.
//!
//! The binary installs [`Chosen`] as its `#[global_allocator]` and calls [`choose`] first
//! thing in `main`. Every block is freed by the allocator that made it because the choice
//! is fixed by the first allocation: if anything was allocated before [`choose`], that
//! allocation fixed mimalloc and [`choose`] changes nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Which allocator serves the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// mimalloc: fast for the many small, short-lived blocks of a compile. Its freed pages
    /// are kept, never given back to the system while the process runs (see
    /// `keep_freed_pages`).
    Mimalloc,
    /// glibc's (the system's): cheap to start, for runs that do little.
    System,
}

const UNSET: u8 = 0;
const MIMALLOC: u8 = 1;
const SYSTEM: u8 = 2;

/// Only ever moves once, from `UNSET` to one of the others; a `Relaxed` load suffices
/// because a thread handed a block was handed it after the move (the hand-over orders it).
static CHOSEN: AtomicU8 = AtomicU8::new(UNSET);

/// The allocator a run's command line asks for: [`Kind::System`] when it holds `--check`
/// (anywhere: a wrong guess only costs time), else [`Kind::Mimalloc`]. Takes the raw
/// arguments so that `main` can decide before it allocates anything.
pub fn for_args<'a>(mut args: impl Iterator<Item = &'a [u8]>) -> Kind {
    if args.any(|a| a == b"--check") { Kind::System } else { Kind::Mimalloc }
}

/// Fixes the allocator for the rest of the run. Returns whether `kind` was taken: false
/// once anything was allocated (the allocator that did it stays).
pub fn choose(kind: Kind) -> bool {
    let value = match kind {
        Kind::Mimalloc => MIMALLOC,
        Kind::System => SYSTEM,
    };
    let taken = CHOSEN.compare_exchange(UNSET, value, Relaxed, Relaxed).is_ok();
    if taken && kind == Kind::Mimalloc {
        keep_freed_pages();
    }
    taken || CHOSEN.load(Relaxed) == value
}

/// mimalloc's `mi_option_purge_delay` (its v2 `mimalloc.h`; libmimalloc-sys names no
/// constant for it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc keeps every page freed, never giving it back to the system before the process
/// exits (its purge delay -1; the default is 10 ms), unless `MIMALLOC_PURGE_DELAY` (or its
/// older name) in the environment says otherwise.
///
/// Given back, a page freed early in a compile (the previous lock's bytes, the pod's
/// parse) is faulted in and zeroed again when the compile grows later. Kept, the
/// 3,000-agent one-agent edit took about 5 ms (7 %) less and a fresh compile about 8 %
/// less, for 3–7 MB more peak RSS from 3,000 to 30,000 agent ids (the heap's peak is the
/// same: what it kept was freed). A watch finds the memory its last compile freed in
/// place for the next one (docs/performance.md, twenty-ninth sitting).
fn keep_freed_pages() {
    // mimalloc read its environment as the process loaded, so it is looked at here.
    if ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"].iter().all(|v| std::env::var_os(v).is_none()) {
        // SAFETY: stores a number in mimalloc's table of options; it allocates nothing.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, -1) }
    }
}

/// Whether glibc's allocator serves this run; the first allocation fixes mimalloc if
/// nothing was chosen before it.
#[inline]
fn system() -> bool {
    match CHOSEN.load(Relaxed) {
        SYSTEM => true,
        MIMALLOC => false,
        _ => {
            let _ = CHOSEN.compare_exchange(UNSET, MIMALLOC, Relaxed, Relaxed);
            CHOSEN.load(Relaxed) == SYSTEM
        }
    }
}

/// The global allocator: mimalloc or glibc's, as [`choose`] fixed it.
pub struct Chosen;

// SAFETY: every call forwards to one of two sound allocators, and the same one for every
// call of the run (the choice never changes after the first allocation), so each block is
// resized and freed by the allocator that made it.
unsafe impl GlobalAlloc for Chosen {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { if system() { System.alloc(layout) } else { mimalloc::MiMalloc.alloc(layout) } }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe { if system() { System.alloc_zeroed(layout) } else { mimalloc::MiMalloc.alloc_zeroed(layout) } }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was made by the same allocator (see the impl's comment).
        unsafe { if system() { System.dealloc(ptr, layout) } else { mimalloc::MiMalloc.dealloc(ptr, layout) } }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`.
        unsafe { if system() { System.realloc(ptr, layout, new_size) } else { mimalloc::MiMalloc.realloc(ptr, layout, new_size) } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(args: &[&str]) -> Kind {
        for_args(args.iter().map(|a| a.as_bytes()))
    }

    #[test]
    fn a_check_takes_the_system_allocator_and_everything_else_mimalloc() {
        assert_eq!(kind(&["clawc", "compile", "--check", "claw-pod.yml"]), Kind::System);
        assert_eq!(kind(&["clawc", "compile", "claw-pod.yml", "--check"]), Kind::System);
        assert_eq!(kind(&["clawc", "compile", "claw-pod.yml"]), Kind::Mimalloc);
        assert_eq!(kind(&["clawc", "compat", "old.json", "new.json"]), Kind::Mimalloc);
        assert_eq!(kind(&["clawc", "compile", "--checked"]), Kind::Mimalloc);
        assert_eq!(kind(&["clawc", "compile", "--watch", "claw-pod.yml"]), Kind::Mimalloc);
        assert_eq!(kind(&["clawc", "compile", "--watch", "--check"]), Kind::System, "refused by clap anyway");
    }

    #[test]
    fn the_choice_cannot_change_once_made() {
        // Tests allocate with the default allocator, not `Chosen`: only this test moves it.
        // Option 15 is the purge delay: 10 ms, mimalloc v2's default, until mimalloc is
        // chosen (`MIMALLOC_VERBOSE=1` prints it as `purge_delay` as the process loads).
        // SAFETY: reads a number from mimalloc's table of options.
        let purge_delay = || unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(purge_delay(), 10);
        assert!(choose(Kind::Mimalloc));
        assert_eq!(purge_delay(), -1, "freed pages are never given back");
        assert!(!choose(Kind::System), "a second, different choice is refused");
        assert!(choose(Kind::Mimalloc), "the same choice again is what holds");
        assert!(!system());
    }
}
