//! Independent work split across threads, with results in input order.
//!
//! The compile's per-agent passes (rendering, `report.json`'s agents, hashing distinct
//! renderings, staging files) are pure functions of each item, so the work is cut into
//! contiguous runs, one per thread, and the results are put back together in the order of
//! the items: the output cannot depend on the thread count or on scheduling. Plain scoped
//! threads do it; no pool outlives a call.

use std::num::NonZeroUsize;

/// The most threads a compile uses by default: beyond this, the serial parts (parsing,
/// inserting paths into the tree, the journal) dominate.
pub(crate) const MAX_DEFAULT: usize = 8;

/// Below this many files, a tree is looked at (`lstat`s, and `--check`'s hashing) on one
/// thread: starting threads costs more than they save.
pub(crate) const PARALLEL_MIN_FILES: usize = 1024;

/// The CPUs this process may run on (its affinity mask), at least 1. Unlike
/// [`std::thread::available_parallelism`] it does not read the cgroup's CPU quota (three
/// files, a tenth of a millisecond or more): for `--check`'s few `lstat` threads, which are
/// capped anyway, the quota changes nothing worth a no-op check's time.
pub(crate) fn cores() -> usize {
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed; the call only
    // writes into it, and CPU_COUNT only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw mut set) != 0 {
            return 1;
        }
        usize::try_from(libc::CPU_COUNT(&set)).unwrap_or(1).max(1)
    }
}

/// How many threads: `requested` when not 0, else the CPUs this process may use, at most
/// [`MAX_DEFAULT`]. The CPUs are counted once per process: the count reads the cgroup's
/// quota files, a tenth of a millisecond each time, and a compile asks several times.
pub(crate) fn threads(requested: usize) -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    if requested > 0 {
        return requested;
    }
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, NonZeroUsize::get).min(MAX_DEFAULT))
}

/// `f(start, run)` over contiguous runs of `items` (`start`: the index of the run's first
/// item), on up to `threads` threads, each run holding at least `min_run` items (so small
/// inputs stay on the calling thread, where a spawn would cost more than it saves). The
/// results come back in the order of the runs.
///
/// A thread the system refuses to start is replaced by running its part on the calling
/// thread; a panic in a part is raised again on the caller.
pub(crate) fn map_runs<T: Sync, R: Send>(items: &[T], threads: usize, min_run: usize, f: impl Fn(usize, &[T]) -> R + Sync) -> Vec<R> {
    let parts = threads.min(items.len() / min_run.max(1)).max(1);
    if parts == 1 {
        return vec![f(0, items)];
    }
    let run = items.len().div_ceil(parts);
    let runs: Vec<(usize, &[T])> = items.chunks(run).enumerate().map(|(i, r)| (i * run, r)).collect();
    map_each(runs, f)
}

/// [`map_runs`], each run given a value of its own, made by `make` on the calling thread:
/// for what cannot be shared between threads (a record of lookups kept in a `RefCell`),
/// copied once per run and handed back with the run's result.
pub(crate) fn map_runs_owning<T: Sync, S: Send, R: Send>(
    items: &[T],
    threads: usize,
    min_run: usize,
    make: impl Fn() -> S,
    f: impl Fn(S, &[T]) -> R + Sync,
) -> Vec<R> {
    // No more runs than threads: a value for each.
    let made: Vec<std::sync::Mutex<Option<S>>> = (0..threads.max(1)).map(|_| std::sync::Mutex::new(Some(make()))).collect();
    map_runs(items, threads, min_run, |_, run| {
        let own = made.iter().find_map(take).expect("a value per run");
        f(own, run)
    })
}

/// [`map_runs`] for items whose costs differ: contiguous runs of about the same total
/// `weight` each, on up to `threads` threads (one run when the whole weighs less than
/// `min_weight`).
pub(crate) fn map_weighted<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    min_weight: usize,
    weight: impl Fn(&T) -> usize,
    f: impl Fn(usize, &[T]) -> R + Sync,
) -> Vec<R> {
    let weights: Vec<usize> = items.iter().map(weight).collect();
    let total: usize = weights.iter().sum();
    let parts = threads.min(total / min_weight.max(1)).max(1);
    let (mut runs, mut start, mut sum) = (Vec::with_capacity(parts), 0, 0);
    for (i, w) in weights.iter().enumerate() {
        sum += w;
        // Cut where this part's share of the whole is reached.
        if runs.len() + 1 < parts && sum.saturating_mul(parts) >= total.saturating_mul(runs.len() + 1) {
            runs.push((start, &items[start..=i]));
            start = i + 1;
        }
    }
    runs.push((start, &items[start..]));
    map_each(runs, f)
}

/// `f(run, part)` over contiguous runs of `items`, each with the part of `out` that
/// belongs to it (`per` elements of `out` for each item, in order), on up to `threads`
/// threads as [`map_runs`] splits them: for results written in place rather than
/// collected. A thread the system refuses to start has its part done on the calling
/// thread.
pub(crate) fn fill_runs<T: Sync, U: Send>(
    items: &[T],
    out: &mut [U],
    per: usize,
    threads: usize,
    min_run: usize,
    f: impl Fn(&[T], &mut [U]) + Sync,
) {
    assert_eq!(out.len(), items.len() * per, "a part of `out` for each item");
    let parts = threads.min(items.len() / min_run.max(1)).max(1);
    if parts == 1 {
        return f(items, out);
    }
    let run = items.len().div_ceil(parts);
    // Each part handed over through a slot, so that a refused thread leaves it here.
    let slots: Vec<_> = items.chunks(run).zip(out.chunks_mut(run * per)).map(|p| std::sync::Mutex::new(Some(p))).collect();
    let f = &f;
    std::thread::scope(|s| {
        let spawned: Vec<_> = slots[1..]
            .iter()
            .map(|slot| {
                let work = move || {
                    if let Some((r, o)) = take(slot) {
                        f(r, o);
                    }
                };
                std::thread::Builder::new().name("clawc-job".into()).spawn_scoped(s, work).ok()
            })
            .collect();
        if let Some((r, o)) = take(&slots[0]) {
            f(r, o);
        }
        for handle in spawned.into_iter().flatten() {
            handle.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
        // Parts whose thread was refused.
        for slot in &slots[1..] {
            if let Some((r, o)) = take(slot) {
                f(r, o);
            }
        }
    });
}

/// `f(state, start, block)` over blocks of `block` items each (`start`: the index of the
/// block's first item), claimed one at a time by `threads` threads, the calling thread
/// among them once it has run `first`: for work whose cost per item is even but whose
/// threads start at different times, as `--check`'s `lstat`s of the outputs while the
/// calling thread looks at the inputs. A thread that would finish its share early takes
/// the next block instead, so none is left working alone at the end. Each thread makes
/// its own `state` with `make` when it claims its first block. The results come back in
/// the order of the blocks, whichever thread made them.
///
/// A thread the system refuses to start leaves its blocks to the others; a panic in a
/// block is raised again on the caller.
pub(crate) fn claim_blocks<T: Sync, S, R: Send, C>(
    items: &[T],
    block: usize,
    threads: usize,
    make: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, &[T]) -> R + Sync,
    first: impl FnOnce() -> C,
) -> (C, Vec<R>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let block = block.max(1);
    let blocks = items.len().div_ceil(block);
    let next = AtomicUsize::new(0);
    let work = || {
        let (mut state, mut done) = (None, Vec::new());
        loop {
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= blocks {
                return done;
            }
            let start = b * block;
            let s = state.get_or_insert_with(&make);
            done.push((b, f(s, start, &items[start..(start + block).min(items.len())])));
        }
    };
    std::thread::scope(|s| {
        let spawned: Vec<_> = (1..threads.min(blocks))
            .filter_map(|_| std::thread::Builder::new().name("clawc-job".into()).spawn_scoped(s, work).ok())
            .collect();
        let c = first();
        let mut all = work();
        for h in spawned {
            all.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        all.sort_unstable_by_key(|(b, _)| *b);
        (c, all.into_iter().map(|(_, r)| r).collect())
    })
}

/// What `slot` holds, taken out (once).
fn take<P>(slot: &std::sync::Mutex<Option<P>>) -> Option<P> {
    slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
}

/// `f` over each run (at least one), the first on the calling thread and the others each
/// on a thread of their own; the results in the order of the runs.
fn map_each<T: Sync, R: Send>(runs: Vec<(usize, &[T])>, f: impl Fn(usize, &[T]) -> R + Sync) -> Vec<R> {
    if let [(at, run)] = runs[..] {
        return vec![f(at, run)];
    }
    let f = &f;
    std::thread::scope(|s| {
        // The first run is the calling thread's own: it works instead of waiting.
        let spawned: Vec<_> = runs[1..]
            .iter()
            .map(|&(at, r)| ((at, r), std::thread::Builder::new().name("clawc-job".into()).spawn_scoped(s, move || f(at, r)).ok()))
            .collect();
        let mut out = Vec::with_capacity(runs.len());
        out.push(f(runs[0].0, runs[0].1));
        for ((at, r), handle) in spawned {
            out.push(match handle {
                Some(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                None => f(at, r),
            });
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_in_order_whatever_the_thread_count() {
        let items: Vec<u32> = (0..1000).collect();
        for threads in [1, 2, 3, 4, 7, 8, 64] {
            let runs: Vec<(usize, Vec<u32>)> = map_runs(&items, threads, 10, |at, run| (at, run.to_vec()));
            assert!(runs.iter().all(|(at, run)| items[*at..].starts_with(run)));
            let sums: Vec<Vec<u32>> = runs.into_iter().map(|(_, run)| run).collect();
            assert_eq!(sums.concat(), items, "{threads} threads");
            assert!(sums.len() <= threads.max(1));
        }
    }

    #[test]
    fn weighted_runs_are_in_order_and_share_the_weight() {
        // The heavy items all at the end, as descriptors after agents in name order.
        let items: Vec<usize> = (0..400).map(|i| if i < 300 { 1 } else { 100 }).collect();
        for threads in [1, 2, 3, 8] {
            let runs: Vec<(usize, Vec<usize>)> = map_weighted(&items, threads, 1, |w| *w, |at, run| (at, run.to_vec()));
            assert!(runs.iter().all(|(at, run)| items[*at..].starts_with(run)));
            let parts: Vec<Vec<usize>> = runs.into_iter().map(|(_, run)| run).collect();
            assert_eq!(parts.concat(), items, "{threads} threads");
            assert_eq!(parts.len(), threads);
            let total: usize = items.iter().sum();
            for part in &parts {
                let w: usize = part.iter().sum();
                assert!(w <= total / threads + 100, "{threads} threads: a part of {w} of {total}");
            }
        }
        assert_eq!(map_weighted(&items, 8, 1_000_000, |w| *w, |_, run| run.len()), vec![400]);
        assert_eq!(map_weighted(&[] as &[usize], 8, 1, |w| *w, |_, run| run.len()), vec![0]);
    }

    #[test]
    fn each_run_owns_a_value_of_its_own() {
        let items: Vec<u32> = (0..1000).collect();
        for threads in [1, 2, 3, 8] {
            // A value that cannot be shared between threads, handed back with the run.
            let runs = map_runs_owning(
                &items,
                threads,
                100,
                || std::cell::Cell::new(0u32),
                |own, run| {
                    run.iter().for_each(|i| own.set(own.get() + i));
                    (run.len(), own)
                },
            );
            assert!(runs.len() <= threads.max(1));
            assert_eq!(runs.iter().map(|(n, _)| n).sum::<usize>(), items.len());
            assert_eq!(runs.iter().map(|(_, c)| c.get()).sum::<u32>(), items.iter().sum::<u32>(), "{threads} threads");
        }
    }

    #[test]
    fn claimed_blocks_come_back_in_order_whatever_thread_took_them() {
        let items: Vec<u32> = (0..1000).collect();
        for (threads, block) in [(1, 7), (2, 7), (3, 128), (8, 1), (2, 5000)] {
            let (first, blocks) = claim_blocks(
                &items,
                block,
                threads,
                // Each thread's own count of the blocks it took: made once per thread.
                || 0usize,
                |taken, start, b| {
                    *taken += 1;
                    (start, b.to_vec(), *taken)
                },
                || std::thread::current().id(),
            );
            assert_eq!(first, std::thread::current().id(), "`first` runs on the calling thread");
            assert_eq!(blocks.len(), 1000usize.div_ceil(block), "{threads} threads, blocks of {block}");
            assert!(blocks.iter().all(|(start, b, _)| items[*start..].starts_with(b) && b.len() <= block));
            let all: Vec<Vec<u32>> = blocks.iter().map(|(_, b, _)| b.clone()).collect();
            assert_eq!(all.concat(), items, "{threads} threads, blocks of {block}");
            // No thread's state was made twice: the counts taken restart at 1 once per thread.
            let firsts = blocks.iter().filter(|(_, _, taken)| *taken == 1).count();
            assert!((1..=threads).contains(&firsts), "{firsts} states for {threads} threads");
        }
        let (_, none) = claim_blocks(&[] as &[u8], 4, 2, || (), |(), _, b| b.len(), || ());
        assert!(none.is_empty());
    }

    #[test]
    fn a_thread_that_starts_late_leaves_no_one_working_alone() {
        // The calling thread is busy in `first` until the others have taken every block.
        let items: Vec<u32> = (0..64).collect();
        let caller = std::thread::current().id();
        let (_, ids) = claim_blocks(
            &items,
            1,
            2,
            || (),
            |(), _, _| std::thread::current().id(),
            || std::thread::sleep(std::time::Duration::from_millis(200)),
        );
        assert!(ids.iter().all(|id| *id != caller), "the spawned thread took every block while the caller was busy");
    }

    #[test]
    fn small_inputs_stay_on_one_thread() {
        let items = [1, 2, 3];
        let caller = std::thread::current().id();
        let ids = map_runs(&items, 8, 4, |_, _| std::thread::current().id());
        assert_eq!(ids, vec![caller]);
        assert_eq!(map_runs(&[] as &[u8], 8, 1, |_, run| run.len()), vec![0]);
    }

    #[test]
    fn each_run_fills_its_own_part_whatever_the_thread_count() {
        let items: Vec<u32> = (0..1000).collect();
        for threads in [1, 2, 3, 8] {
            let mut out = vec![0u32; items.len() * 2];
            fill_runs(&items, &mut out, 2, threads, 10, |run, part| {
                for (i, pair) in run.iter().zip(part.chunks_exact_mut(2)) {
                    pair.copy_from_slice(&[*i, i * 3]);
                }
            });
            let want: Vec<u32> = items.iter().flat_map(|i| [*i, i * 3]).collect();
            assert_eq!(out, want, "{threads} threads");
        }
    }

    #[test]
    fn zero_asks_for_the_default() {
        assert!((1..=MAX_DEFAULT).contains(&threads(0)));
        assert_eq!(threads(3), 3);
    }
}
