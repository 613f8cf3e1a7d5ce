#!/usr/bin/env bash
# Drive every agent of a compiled pod through its real runner CLI and check that the runner
# shows the model exactly the MCP tools the compiler promised.
#
#   tests/runners/run.sh OUT_DIR
#
# OUT_DIR is the compiler's output: OUT_DIR/runners/<agent>/runner.json (+ home/, project/).
# A directory whose children are agent dirs directly works too.
# For each runner.json, "runner" picks the runner and "tools"[].name is the expected list.
#
# Environment:
#   RUNNERS="codex gemini ..."   only these runners (default: all seven)
#   RUNNERS_CONTROL="codex"      runners whose first agent is also run with --control: the
#                                filter is stripped and the run must FAIL showing gamma, so
#                                the suite proves it can catch a leak (default: codex;
#                                "none" to skip)
#   RUNNERS_TOKEN=S              the MCP server requires `Authorization: Bearer S` and every
#                                runner gets LOOP_TOKEN=S (drive.py --token): the emitted
#                                references to the variable must work
#   CLAWC=PATH                   the clawc binary; nanobot's test-only model provider is then
#                                merged into its config with `clawc merge`
#   CI=true                      a runner that is not installed is a failure, not a skip
#   CLAWC_RUNNER_CACHE           where install.sh put the runners (/var/cache/clawc-runners)
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:?usage: run.sh OUT_DIR}
CACHE=${CLAWC_RUNNER_CACHE:-/var/cache/clawc-runners}
ALL="codex gemini claude-code opencode openclaw hermes nanobot"
RUNNERS=${RUNNERS:-$ALL}
CONTROL=${RUNNERS_CONTROL:-codex}
TOKEN=${RUNNERS_TOKEN:-}
CI=${CI:-false}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# agents DIR -> lines "runner<TAB>agent_dir<TAB>expect_file"
agents() {
  python3 - "$1" "$work" <<'EOF'
import json, os, sys
out, work = sys.argv[1], sys.argv[2]
base = os.path.join(out, "runners") if os.path.isdir(os.path.join(out, "runners")) else out
for name in sorted(os.listdir(base)):
    d = os.path.join(base, name)
    rj = os.path.join(d, "runner.json")
    if not os.path.isfile(rj):
        continue
    spec = json.load(open(rj))
    expect = os.path.join(work, f"{os.path.basename(os.path.dirname(d))}-{name}.expect")
    with open(expect, "w") as f:
        for t in spec.get("tools", []):
            f.write(t["name"] + "\n")
    print(f"{spec['runner']}\t{d}\t{expect}")
EOF
}

rows=() pass=0 fail=0 skip=0
record() { # status runner agent mode secs note
  rows+=("$(printf '%-5s %-12s %-22s %-9s %6ss  %s' "$@")")
  case $1 in ok) pass=$((pass + 1)) ;; skip) skip=$((skip + 1)) ;; *) fail=$((fail + 1)) ;; esac
}

installed() { [ -x "$CACHE/bin/$1" ]; }

drive() { # mode runner agent_dir expect [args...]
  local mode=$1 runner=$2 dir=$3 expect=$4; shift 4
  local agent; agent=$(basename "$dir")
  if ! installed "$runner"; then
    if [ "$CI" = true ]; then
      record FAIL "$runner" "$agent" "$mode" 0 "not installed (CI=true: run install.sh)"
    else
      record skip "$runner" "$agent" "$mode" 0 "not installed"
    fi
    return
  fi
  local log="$work/$runner-$agent-$mode.log" t0=$SECONDS rc
  echo "=== $runner $agent ($mode)"
  timeout -k 10 400 "$HERE/drive.py" "$runner" "$dir" "$expect" "$@" >"$log" 2>&1
  rc=$?
  sed 's/^/    /' "$log"
  local secs=$((SECONDS - t0))
  if [ "$mode" = control ]; then
    # The control strips the filter: it must fail (exit 1) and show gamma.
    if [ $rc = 1 ] && grep -q 'gamma' "$log"; then
      record ok "$runner" "$agent" "$mode" "$secs" "leak detected as it should be"
    else
      record FAIL "$runner" "$agent" "$mode" "$secs" "control did not detect the leak (rc=$rc)"
    fi
  elif [ $rc = 0 ]; then
    record ok "$runner" "$agent" "$mode" "$secs" ""
  else
    record FAIL "$runner" "$agent" "$mode" "$secs" "$(grep -m1 -E 'MISMATCH|ERROR' "$log" | cut -c1-80)"
  fi
}

t_all=$SECONDS
mapfile -t list < <(agents "$OUT")
[ ${#list[@]} -gt 0 ] || { echo "run.sh: no runner.json under $OUT" >&2; exit 2; }
declare -A controlled=()
for r in $RUNNERS; do
  found=0
  for line in "${list[@]}"; do
    IFS=$'\t' read -r runner dir expect <<<"$line"
    [ "$runner" = "$r" ] || continue
    found=1
    token=()
    [ -z "$TOKEN" ] || token=(--token "$TOKEN")
    drive filtered "$runner" "$dir" "$expect" "${token[@]}"
    if [[ " $CONTROL " == *" $runner "* ]] && [ -z "${controlled[$runner]:-}" ]; then
      controlled[$runner]=1
      drive control "$runner" "$dir" "$expect" --control "${token[@]}"
    fi
  done
  [ $found = 1 ] || echo "(no agent for runner $r in $OUT)"
done

echo
echo "== runner harness summary ($OUT, $((SECONDS - t_all)) s)"
printf '%-5s %-12s %-22s %-9s %7s  %s\n' "" runner agent mode time note
printf '%s\n' "${rows[@]}"
echo
echo "runners: $pass passed, $fail failed, $skip skipped"
[ $fail = 0 ]
