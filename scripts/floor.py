#!/usr/bin/env python3
"""One-shot compiles of a big pod against a fresh one, in the same rounds (medians).

Usage: python3 scripts/floor.py BIN ROUNDS [POD]

POD (default /dev/shm/pod3k) is what the compile bench's generator makes:
`target/release/deps/compile-* --generate POD 10` (3,000 agent ids). It is copied to
/dev/shm/fpod and compiled into /dev/shm/fout, with its stat record and memo in
/dev/shm/fcache. Each round: the one-shot compile of one agent service's grant narrowed
(or put back), a no-op compile, a no-op `--check`, `sha256sum` of the inputs the lock
lists; every fourth round, a full compile into an empty directory with an empty cache
(`fresh`, what the ratios are of), and one into an empty directory with the pod's cache. Each time is printed
with its ratio to the fresh compile's.
"""
import json, os, shutil, statistics, subprocess, sys, time
import editpod

bin, n = sys.argv[1], int(sys.argv[2])
src = sys.argv[3] if len(sys.argv) > 3 else '/dev/shm/pod3k'
pod = '/dev/shm/fpod'
editpod.copy(src, pod)
orig = open(pod + '/claw-pod.yml').read()
edited = editpod.narrowed(orig)
cache, out = '/dev/shm/fcache', '/dev/shm/fout'
for d in (cache, out):
    shutil.rmtree(d, ignore_errors=True)
env = dict(os.environ, CLAWC_CACHE_DIR=cache)


def run(cmd, e=env):
    start = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=pod, env=e, stdout=subprocess.DEVNULL)
    _, status, _ = os.wait4(p.pid, 0)
    took = time.perf_counter() - start
    assert status == 0, (cmd, status)
    return took


compile = [bin, 'compile', '--images', 'none', 'claw-pod.yml', '-o', out]
run(compile)
time.sleep(0.02)
run(compile)
inputs = [i['path'] for i in json.load(open(out + '/clawc.lock'))['inputs'] if i.get('sha256')]
t = {k: [] for k in ['fresh', 'fresh-warm', 'edit', 'noop-compile', 'noop-check', 'sha256sum']}
for i in range(n):
    time.sleep(0.03)
    open(pod + '/claw-pod.yml', 'w').write(edited if i % 2 == 0 else orig)
    time.sleep(0.03)
    t['edit'].append(run(compile))
    time.sleep(0.02)
    t['noop-compile'].append(run(compile))
    time.sleep(0.02)
    t['noop-check'].append(run(compile + ['--check']))
    t['sha256sum'].append(run(['sha256sum'] + inputs, dict(os.environ)))
    if i % 4 == 0:
        # A full compile: a new --out and an empty cache (nothing kept from before: no
        # stat record, memo or decoded descriptor).
        for d in ('/dev/shm/ffresh', '/dev/shm/ffresh-cache'):
            shutil.rmtree(d, ignore_errors=True)
        cold = dict(os.environ, CLAWC_CACHE_DIR='/dev/shm/ffresh-cache')
        t['fresh'].append(run([bin, 'compile', '--images', 'none', 'claw-pod.yml', '-o', '/dev/shm/ffresh'], cold))
        # A new --out with the pod's warm cache (its decoded descriptors).
        shutil.rmtree('/dev/shm/ffresh', ignore_errors=True)
        t['fresh-warm'].append(run([bin, 'compile', '--images', 'none', 'claw-pod.yml', '-o', '/dev/shm/ffresh']))
fresh = statistics.median(t['fresh'])
for k, v in t.items():
    m = statistics.median(v)
    print(f"{k:13} median {m * 1000:7.1f} ms  of fresh {m / fresh:5.3f}  (n={len(v)})")
