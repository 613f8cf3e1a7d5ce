#!/usr/bin/env bash
# Benchmark: compile a pod of N (default 50) services, each described by its own image,
# reading the images from a real Docker Engine. Compares clawc cold (empty cache), clawc
# warm (second compile, cache filled) and a shell loop doing the same work per image with
# the docker CLI: `docker image inspect` + `docker create` + `docker cp` + `docker rm`.
# Also times the daemonless path (--images oci:DIR made by skopeo). Prints medians of RUNS
# (default 5) runs. Starts and stops its own private engine (tests/images/engine.sh).
#
#   benches/images.sh [N] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-50} runs=${2:-5}
export CI=${CI:-}
# shellcheck source=../tests/images/engine.sh
source tests/images/engine.sh
ENGINE_FIXTURES=0 engine_start || { echo "benches/images.sh needs a Docker Engine" >&2; exit 1; }
work=$(mktemp -d)
trap 'engine_stop; rm -rf "$work"' EXIT
export DOCKER_HOST=$CLAWC_TEST_DOCKER_HOST DOCKER_BUILDKIT=0
cargo build --release --locked --quiet
bin=$PWD/target/release/clawc

echo "building $n images FROM scratch…" >&2
pod="$work/pod/claw-pod.yml"
mkdir -p "$work/pod/desk"
printf 'FROM scratch\nLABEL claw.type=openclaw\n' >"$work/pod/desk/Dockerfile"
{
  echo "services:"
  echo "  desk:"
  echo "    build: ./desk"
  echo "    x-claw:"
  echo "      cllama: passthrough"
  echo "      tools:"
  for i in $(seq 1 "$n"); do echo "        - svc-$i"; done
  for i in $(seq 1 "$n"); do printf '  svc-%s:\n    image: bench/svc-%s:1\n' "$i" "$i"; done
} >"$pod"
for i in $(seq 1 "$n"); do
  ctx="$work/ctx/$i"
  mkdir -p "$ctx"
  printf '{"version": 2, "description": "service %s", "tools": [{"name": "op_%s", "description": "Operation %s", "inputSchema": {"type": "object"}, "http": {"method": "POST", "path": "/op"}}]}\n' "$i" "$i" "$i" >"$ctx/describe.json"
  printf 'FROM scratch\nCOPY describe.json /claw/describe.json\nLABEL claw.describe=/claw/describe.json\nCMD ["/none"]\n' >"$ctx/Dockerfile"
  docker build -q -t "bench/svc-$i:1" "$ctx" >/dev/null 2>&1
done
for i in $(seq 1 "$n"); do
  skopeo copy -q --src-daemon-host "$DOCKER_HOST" "docker-daemon:bench/svc-$i:1" "oci:$work/oci:bench/svc-$i:1" >/dev/null
done

ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

loop() {
  local i id
  for i in $(seq 1 "$n"); do
    docker image inspect "bench/svc-$i:1" >/dev/null
    id=$(docker create "bench/svc-$i:1")
    docker cp "$id:/claw/describe.json" - >/dev/null
    docker rm "$id" >/dev/null
  done
}

cold=() warm=() shell=() oci=()
for r in $(seq 1 "$runs"); do
  cache="$work/cache-$r"
  cold+=("$(ms env CLAWC_CACHE_DIR="$cache" "$bin" compile "$pod" --images docker -o "$work/out")")
  warm+=("$(ms env CLAWC_CACHE_DIR="$cache" "$bin" compile "$pod" --images docker -o "$work/out")")
  oci+=("$(ms "$bin" compile "$pod" --images "oci:$work/oci" --no-cache -o "$work/out-oci")")
  shell+=("$(ms loop)")
done
diff -r "$work/out" "$work/out-oci" >/dev/null || { echo "docker and OCI outputs differ" >&2; exit 1; }
c=$(printf '%s\n' "${cold[@]}" | median) w=$(printf '%s\n' "${warm[@]}" | median)
s=$(printf '%s\n' "${shell[@]}" | median) o=$(printf '%s\n' "${oci[@]}" | median)
echo "images: $n distinct, runs: $runs (medians; all runs: cold ${cold[*]} / warm ${warm[*]} / oci ${oci[*]} / loop ${shell[*]})"
echo "clawc cold (empty cache, --images docker):   $c ms"
echo "clawc warm (cache filled, --images docker):  $w ms"
echo "clawc daemonless (--images oci:DIR, no cache): $o ms"
echo "shell loop (inspect+create+cp+rm per image): $s ms"
awk -v s="$s" -v w="$w" -v c="$c" 'BEGIN { printf "warm is %.1fx faster than the loop; cold is %.1fx\n", s / (w > 0 ? w : 1), s / (c > 0 ? c : 1) }'
