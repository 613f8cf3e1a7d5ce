#!/usr/bin/env python3
"""One agent's grant changed and compiled one-shot, by several clawc builds in the same rounds.

Usage: python3 scripts/ab-edit.py [--check] ROUNDS BIN...

Each build gets its own copy of /dev/shm/pod3k (what `target/release/deps/compile-*
--generate /dev/shm/pod3k 10` makes: 3,000 agent ids), `--out` and cache, compiled twice
first. Each round narrows (or puts back) one agent service's grant in every copy and
compiles each copy once, the builds' order alternating; medians and quartiles printed,
with the median CPU time (user + system, all threads) and how many cores that is of the
wall time.

With `--check`, each round times `compile --check` instead, twice per build after its
compile: the first check after the compile (the lock was written within the stat
record's clock tick, so the check takes the record's copy of it by the lock's digest),
and, after a pause and another check, a no-op check whose lock the record vouches for.
"""
import os, shutil, statistics, subprocess, sys, time
import editpod
checks = sys.argv[1] == '--check'
args = sys.argv[2:] if checks else sys.argv[1:]
bins = args[1:]; n = int(args[0]); src = '/dev/shm/pod3k'
setups = []
for k, b in enumerate(bins):
    pod, out, cache = f'/dev/shm/ab{k}pod', f'/dev/shm/ab{k}out', f'/dev/shm/ab{k}cache'
    for d in (out, cache): shutil.rmtree(d, ignore_errors=True)
    editpod.copy(src, pod)
    setups.append((b, pod, out, cache))
orig = open(src + '/claw-pod.yml').read(); edited = editpod.narrowed(orig)
def run(b, pod, out, cache, *extra):
    t = time.perf_counter()
    p = subprocess.Popen([b, 'compile', '--images', 'none', 'claw-pod.yml', '-o', out, *extra], cwd=pod, env=dict(os.environ, CLAWC_CACHE_DIR=cache), stdout=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0); assert st == 0, (b, extra)
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime
for s in setups: run(*s); time.sleep(0.02); run(*s)
lines = ('first check after a compile', 'no-op check') if checks else ('edit',)
t = {(b, line): [] for b in bins for line in lines}
for i in range(n):
    order = setups if i % 2 == 0 else setups[::-1]
    for (b, pod, out, cache) in order:
        open(pod + '/claw-pod.yml', 'w').write(edited if i % 2 == 0 else orig)
        time.sleep(0.03)
        if not checks:
            t[b, 'edit'].append(run(b, pod, out, cache))
        else:
            run(b, pod, out, cache)
            t[b, lines[0]].append(run(b, pod, out, cache, '--check'))
            time.sleep(0.03)
            run(b, pod, out, cache, '--check')
            t[b, lines[1]].append(run(b, pod, out, cache, '--check'))
        time.sleep(0.02)
for b in bins:
    for line in lines:
        wall = [w for w, _ in t[b, line]]; cpu = [c for _, c in t[b, line]]
        q = statistics.quantiles(wall)
        print(f"{os.path.basename(b):22} {line} median {statistics.median(wall)*1000:6.1f} ms  (n={n}; quartiles {q[0]*1000:.1f}-{q[2]*1000:.1f});"
              f" CPU {statistics.median(cpu)*1000:.1f} ms, {statistics.median(c / w for w, c in t[b, line]):.2f} cores")
