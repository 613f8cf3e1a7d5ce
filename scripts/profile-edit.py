#!/usr/bin/env python3
"""Where the one-shot one-agent edit's CPU goes, on every thread, by stage.

Usage: python3 scripts/profile-edit.py BIN ROUNDS [POD]

BIN is a build with frame pointers and symbols, made apart from the release build:

    CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \\
    CARGO_PROFILE_RELEASE_DEBUG=1 CARGO_PROFILE_RELEASE_STRIP=none \\
    RUSTFLAGS="-C force-frame-pointers=yes" CARGO_TARGET_DIR=/work/tgt-prof \\
    cargo build --release --bin clawc

POD (default /dev/shm/pod3k) is what the compile bench's generator makes
(`target/release/deps/compile-* --generate POD 10`: 3,000 agent ids; `100`: 30,000). It
is copied to /dev/shm/prof-pod, compiled twice into /dev/shm/prof-out (its stat record
and memo in /dev/shm/prof-cache) unprofiled, then ROUNDS one-shot compiles of one agent service's
grant narrowed or put back in turn run under `perf record -F 2000 --call-graph fp`.

Each stage below is counted on every thread clawc starts (the main thread `clawc`, the
read-ahead `clawc-ahead`, the pass threads `clawc-job`): a filter on the command name
`clawc` alone sees the main thread only, and misses most of the `lstat`s of the outputs,
which the read-ahead makes. A sample counts for each stage on its stack, so stages that
nest add up to more than the whole. CPU per edit is samples / 2,000 Hz / ROUNDS; a profile
build under `perf` takes about 1.5 times the CPU of the release build. The first edit
after the copy costs more than the rest: take 30 rounds or more.
"""
import collections, os, re, shutil, subprocess, sys, time
import editpod

# (stage, a function on the stack that marks it), in the order a compile runs them.
STAGES = [
    ("process start and settings", "clawc::cli::parse"),
    ("pod tree kept, spliced, stored", "KeptTree::parse"),
    ("pod parsed into services", "parse_pod_on"),
    ("descriptors looked for and read", "Sources::describe"),
    ("descriptors decoded (cache)", "decode_registered"),
    ("grants resolved", "grant::resolve_on"),
    ("render keys", "Keys::of"),
    ("report.json's index", "KeptIndex::index"),
    ("projection (reuse and render)", "project::project"),
    ("  services taken from the tree", "Sink>::reuse"),
    ("  services rendered", "render_service"),
    ("  files staged", "Take>::rendered"),
    ("lock made", "lock::build"),
    ("lock written, tree committed", "finish_first"),
    ("stat record stored", "Known::store"),
    ("render memo stored", "memo::store"),
    ("read-ahead (whole thread)", "ahead::read"),
    ("  previous lock read", "previous_lock"),
    ("  stat record read", "Known::load"),
    ("lstat of outputs (any thread)", "Walk::stat"),
    ("page faults (any thread)", "asm_exc_page_fault"),
    ("  huge pages zeroed", "folio_zero_user"),
]
FREQ = 2000
POD, OUT, CACHE = '/dev/shm/prof-pod', '/dev/shm/prof-out', '/dev/shm/prof-cache'


def compile_once(bin):
    """One one-shot compile of the copied pod, as a user runs it."""
    env = dict(os.environ, CLAWC_CACHE_DIR=CACHE)
    subprocess.run([bin, 'compile', '--images', 'none', 'claw-pod.yml', '-o', OUT], cwd=POD, env=env, stdout=subprocess.DEVNULL, check=True)


def samples(text):
    """(command, stack of symbols, leaf first) for each sample of `perf script`."""
    comm, stack = None, []
    for line in text.splitlines():
        if not line.strip():
            if comm is not None and stack:
                yield comm, stack
            comm, stack = None, []
        elif line[0] not in ' \t':
            comm, stack = line.split()[0], []
        else:
            parts = line.strip().split(' ', 1)
            stack.append(re.sub(r'\+0x[0-9a-f]+$', '', parts[1] if len(parts) > 1 else '?'))
    if comm is not None and stack:
        yield comm, stack


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--edits':
        return edits(sys.argv[2], int(sys.argv[3]))
    bin, rounds = os.path.abspath(sys.argv[1]), int(sys.argv[2])
    src = sys.argv[3] if len(sys.argv) > 3 else '/dev/shm/pod3k'
    for d in (OUT, CACHE):
        shutil.rmtree(d, ignore_errors=True)
    editpod.copy(src, POD)
    # The two compiles before the edits (a fresh one, then a no-op) are not profiled.
    for _ in range(2):
        compile_once(bin)
        time.sleep(0.02)
    data = '/dev/shm/prof-perf.data'
    subprocess.run(['perf', 'record', '-q', '-F', str(FREQ), '--call-graph', 'fp', '-o', data, '--',
                    sys.executable, os.path.abspath(__file__), '--edits', bin, str(rounds)], check=True)
    text = subprocess.run(['perf', 'script', '-i', data, '-F', 'comm,tid,ip,sym'], capture_output=True, text=True).stdout
    total, by_comm, hits = 0, collections.Counter(), collections.Counter()
    for comm, stack in samples(text):
        if not comm.startswith('clawc'):
            continue
        total += 1
        by_comm[comm] += 1
        for stage, mark in STAGES:
            if any(mark in f for f in stack):
                hits[stage, comm] += 1
    comms = sorted(by_comm)
    ms = lambda n: n / FREQ / rounds * 1000
    print(f"{rounds} edits of {src}: {ms(total):.1f} ms of CPU each under perf ("
          + ", ".join(f"{c} {100 * by_comm[c] / total:.0f} %" for c in comms) + ")")
    print(f"{'stage':34} {'CPU %':>6} {'ms/edit':>8}  " + "  ".join(f"{c:>11}" for c in comms))
    for stage, _ in STAGES:
        n = sum(hits[stage, c] for c in comms)
        print(f"{stage:34} {100 * n / total:6.1f} {ms(n):8.1f}  " + "  ".join(f"{100 * hits[stage, c] / total:10.1f}%" for c in comms))


def edits(bin, rounds):
    """The profiled part: `rounds` one-shot edits of the pod compiled before."""
    orig = open(POD + '/claw-pod.yml').read()
    edited = editpod.narrowed(orig)
    for i in range(rounds):
        open(POD + '/claw-pod.yml', 'w').write(edited if i % 2 == 0 else orig)
        time.sleep(0.03)
        compile_once(bin)
        time.sleep(0.02)


main()
