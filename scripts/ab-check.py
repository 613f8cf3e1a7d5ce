#!/usr/bin/env python3
"""The first `compile --check` after a compile, and a steady no-op check, by several clawc builds in the same rounds.

Usage: python3 scripts/ab-check.py ROUNDS BIN...

Each build gets its own copy of /dev/shm/pod3k (what `target/release/deps/compile-*
--generate /dev/shm/pod3k 10` makes: 3,000 agent ids), `--out` and cache, compiled twice
first. Each round narrows (or puts back) one agent service's grant in every copy, then for
each build in turn (the order alternating): compiles, checks (the first check after a
compile: the lock was written within the stat record's clock tick, so the check takes the
record's copy of it by the lock's digest), checks again after a pause, and times a last
check (the lock vouched for by its stamp). Medians of the wall time and of the CPU time
(user + system, all threads).
"""
import os, shutil, statistics, subprocess, sys, time
n = int(sys.argv[1]); bins = sys.argv[2:]; src = '/dev/shm/pod3k'
grant = "          allow: [op_0, op_1, op_2, op_3, op_4, op_5, op_6, op_7, op_8, op_9]\n      surfaces: [service://tools-11]"
orig = open(src + '/claw-pod.yml').read(); edited = orig.replace(grant, grant.replace(", op_9", ""), 1)
setups = []
for k, b in enumerate(bins):
    pod, out, cache = f'/dev/shm/ck{k}pod', f'/dev/shm/ck{k}out', f'/dev/shm/ck{k}cache'
    for d in (pod, out, cache): shutil.rmtree(d, ignore_errors=True)
    os.makedirs(pod); shutil.copy(src + '/claw-pod.yml', pod); shutil.copytree(src + '/svc', pod + '/svc')
    setups.append((b, pod, out, cache))
def run(b, pod, out, cache, *extra):
    t = time.perf_counter()
    p = subprocess.Popen([b, 'compile', '--images', 'none', 'claw-pod.yml', '-o', out, *extra], cwd=pod, env=dict(os.environ, CLAWC_CACHE_DIR=cache), stdout=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0); assert os.waitstatus_to_exitcode(st) == 0, (b, extra)
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime
for s in setups: run(*s); time.sleep(0.02); run(*s)
first = {b: [] for b in bins}; steady = {b: [] for b in bins}
for i in range(n):
    order = setups if i % 2 == 0 else setups[::-1]
    for (b, pod, out, cache) in order:
        open(pod + '/claw-pod.yml', 'w').write(edited if i % 2 == 0 else orig)
        time.sleep(0.03)
        run(b, pod, out, cache)
        first[b].append(run(b, pod, out, cache, '--check'))
        time.sleep(0.03)
        run(b, pod, out, cache, '--check')
        steady[b].append(run(b, pod, out, cache, '--check'))
for b in bins:
    for name, t in (('first check after a compile', first[b]), ('no-op check', steady[b])):
        w = [x[0] for x in t]; c = [x[1] for x in t]
        print(f"{os.path.basename(b):22} {name:28} median {statistics.median(w)*1000:6.2f} ms; CPU {statistics.median(c)*1000:.2f} ms")
