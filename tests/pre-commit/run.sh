#!/usr/bin/env bash
# Tests the pre-commit hooks for real: installs the pre-commit framework (PyPI) when it is
# missing, makes a throwaway git repository holding a pod and its compiled tree, and runs
# `pre-commit try-repo <this repository>` against it. pre-commit builds clawc itself
# (`language: rust`, `cargo install`), unoptimised (hook-profile), into a target directory
# kept on the machine between runs (like the runner CLIs), so a later run compiles only
# clawc; with no writable machine cache, under target/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v pre-commit >/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check pre-commit
fi
export PRE_COMMIT_HOME=${PRE_COMMIT_HOME:-$root/target/pre-commit-home}
# The pod is compiled with the tests' own build (before the hook's settings apply).
tests_target=${CARGO_TARGET_DIR:-$root/target}
case $tests_target in /*) ;; *) tests_target=$root/$tests_target ;; esac
clawc_bin=$tests_target/debug/clawc
[ -x "$clawc_bin" ] || (cd "$root" && cargo build --quiet --locked)
# shellcheck source=hook-profile
source "$root/tests/pre-commit/hook-profile"
hook_target=${CLAWC_PRE_COMMIT_TARGET:-/var/cache/clawc-pre-commit/target}
mkdir -p "$hook_target" 2>/dev/null && [ -w "$hook_target" ] || hook_target=$root/target/pre-commit-build
export CARGO_TARGET_DIR=$hook_target
# The drift step edits clock's descriptor in its build context, which counts only when
# clock is read from there rather than from the example's image layout.
export CLAWC_IMAGES=none
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "pre-commit test FAILED: $*" >&2; exit 1; }

git -C "$root" ls-files -z examples/minimal | while IFS= read -r -d '' f; do
  mkdir -p "$work/$(dirname "${f#examples/minimal/}")"
  cp "$root/$f" "$work/${f#examples/minimal/}"
done
"$clawc_bin" compile "$work/claw-pod.yml" -o "$work/.claw-compiled" >/dev/null
cd "$work"
git init -q
git config user.email test@example.com
git config user.name test
git add -A
git commit -qm "pod and compiled tree"

echo "--- in sync: clawc-check passes"
pre-commit try-repo "$root" clawc-check --all-files --verbose >"$work/ok.log" 2>&1 || { cat "$work/ok.log"; fail "an in-sync tree did not pass"; }
grep -q "in sync" "$work/ok.log" || { cat "$work/ok.log"; fail "no 'in sync' in the hook output"; }

echo "--- edited pod and descriptor, stale tree: clawc-check fails with the diff"
sed -i 's/      tools: \[clock\]/      tools: [clock]\n      tool-policy:\n        max-rounds: 3/' claw-pod.yml
grep -q "max-rounds: 3" claw-pod.yml || fail "could not edit the pod"
sed -i 's/"Current time in a time zone"/"Current time in any time zone"/' clock/.claw-describe.json
grep -q "any time zone" clock/.claw-describe.json || fail "could not edit the descriptor"
git add -A
if pre-commit try-repo "$root" clawc-check --all-files >"$work/drift.log" 2>&1; then
  cat "$work/drift.log"; fail "a stale tree passed"
fi
grep -q "update .claw-compiled/context/assistant/tools.json\|update context/assistant/tools.json" "$work/drift.log" || { cat "$work/drift.log"; fail "no per-file change listed"; }
grep -q -- '-      "description": "Current time in a time zone",' "$work/drift.log" || { cat "$work/drift.log"; fail "no diff in the output"; }
grep -q -- '+    "max_rounds": 3,' "$work/drift.log" || { cat "$work/drift.log"; fail "the pod edit is not in the diff"; }
grep -q "clawc compile claw-pod.yml" "$work/drift.log" || { cat "$work/drift.log"; fail "no fix command"; }

echo "--- clawc-compile rewrites the tree and fails once, then passes"
if pre-commit try-repo "$root" clawc-compile --all-files >"$work/compile.log" 2>&1; then
  cat "$work/compile.log"; fail "clawc-compile changed files but passed"
fi
grep -q "files were modified by this hook" "$work/compile.log" || { cat "$work/compile.log"; fail "pre-commit did not report modified files"; }
grep -q "Current time in any time zone" .claw-compiled/context/assistant/tools.json || fail "the tree was not rewritten"
git add -A
pre-commit try-repo "$root" clawc-check --all-files >"$work/after.log" 2>&1 || { cat "$work/after.log"; fail "the rewritten tree does not pass clawc-check"; }
echo "pre-commit hooks: all checks passed"
