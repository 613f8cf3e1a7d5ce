//! `clawc compile --watch`: compile, wait for one of the compile's inputs to change, and
//! compile again, until SIGINT, SIGTERM or SIGHUP (a compile under way is finished or
//! rolled back first, as without `--watch`).
//!
//! The inputs are the files the last compile read or looked for and found missing (the
//! lock's `inputs`, less images), the pod, its `.env` and the settings files: each is
//! watched on its whole way (see [`crate::watch::Inputs`]), so a file an editor replaces
//! by rename, one made where a compile looked for it, or a directory on the way swapped,
//! counts; while nothing is reported there, later compiles replay what was read of it
//! ([`crate::KeptReads`]). An input changed while the compile ran (stamped
//! at or after it began, unless the watch that ran through the compile saw it unchanged)
//! starts the next compile at once. A compile starts once the save it follows is whole
//! (see [`crate::watch::Inputs::wait`]). While it waits, the watch reads
//! the tree it wrote (see [`crate::output::idle`]), so the next compile does not look at
//! every file again. Images are not watched: a rebuilt image is compiled on the next edit.

use super::Format;
use super::compile::Once;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[cfg(target_os = "linux")]
pub(super) use crate::output::idle::Idle;

/// No watch here: nothing is read while idle.
#[cfg(not(target_os = "linux"))]
pub(super) enum Idle {}

/// How long a change that may be one step of several (a file made, removed or renamed
/// away: an editor's save by rename leaves the old file's name empty for a moment) must be
/// followed by no other before the compile starts. A save that is whole (closed after
/// writing, renamed into place) waits only a millisecond, and one still being written is
/// waited for (see [`crate::watch::Inputs::wait`]). Longer is not safer: a change the
/// compile did not see (a `git checkout` still writing) starts the next compile at once,
/// since it is stamped after the compile began.
const SETTLE: Duration = Duration::from_millis(10);

/// Runs `once` (one compile, from what was read while idle) until a signal; the last
/// compile's exit code, or 3 when the inputs cannot be watched.
#[cfg(target_os = "linux")]
pub(super) fn run(format: Format, reads: &crate::KeptReads, mut once: impl FnMut(Option<Idle>) -> Once) -> i32 {
    use crate::watch::Waited;
    let stop = crate::output::write::watch_signals();
    let mut idle = None;
    // The watch that waited, alive through the next compile: what it reports drops the
    // reads kept from under it, until the next watch has begun.
    let mut previous = None;
    loop {
        let begun = crate::disk::now();
        reads.compiling(previous.as_mut());
        let Once { code, inputs, idle: read } = once(idle.take());
        if stop.load(Ordering::SeqCst) {
            return code;
        }
        let Some(mut watch) = reads.watch(inputs, previous.take()) else {
            eprintln!("error: --watch: the inputs cannot be watched (inotify: no instance could be made)");
            return 3;
        };
        let inputs = &watch.paths;
        // Changed after the compile read it and before it was watched: stamped since the
        // compile began (the clock is coarse: in the same tick counts), unless the watch
        // that ran through the compile saw it unchanged.
        let changed = inputs.iter().find(|p| !watch.unchanged.contains(*p) && crate::disk::stamped_since(p, begun));
        let waited = match changed {
            Some(path) => Waited::Changed(path.clone()),
            None => {
                note(format, &format!("watching {} input file{} for changes (Ctrl-C stops)", inputs.len(), plural(inputs.len())));
                watch.inputs.wait(&stop, SETTLE)
            }
        };
        match waited {
            Waited::Changed(path) => {
                // A name from the pod: no escape sequence of it reaches the terminal.
                note(format, &format!("changed: {}; compiling again", crate::diag::printable(&path.display().to_string())));
                idle = read;
                previous = Some(watch);
            }
            Waited::Stopped => return code,
            Waited::Failed => {
                eprintln!("error: --watch: the change notices could not be read");
                return 3;
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn run(_: Format, _: &crate::KeptReads, _: impl FnMut(Option<Idle>) -> Once) -> i32 {
    eprintln!("error: --watch needs Linux (inotify)");
    2
}

/// A line for the person watching (stderr; nothing with `--format json`, whose stdout is
/// one summary per compile).
fn note(format: Format, line: &str) {
    if format == Format::Human {
        eprintln!("{line}");
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
