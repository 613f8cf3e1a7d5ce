# Sourced by scripts/test: a private Docker Engine for the image tests, and the image
# fixtures they read. Installs Debian's docker.io and skopeo when missing, starts dockerd
# on a socket under a temporary directory (vfs storage, no iptables, no bridge, its own
# data and exec roots), builds the fixture images FROM scratch with the classic builder
# (no registry needed), and writes an OCI layout and `docker save` archives of them.
# Exports CLAWC_TEST_DOCKER_HOST and CLAWC_TEST_IMAGES for `cargo test`; call
# engine_stop when done (ENGINE_FIXTURES=0 starts the engine without fixtures). Under
# CI=true a missing engine fails the run; locally the image tests skip with a printed
# reason.

engine_fail() {
  if [ "${CI:-}" = "true" ]; then
    echo "image tests: $*" >&2
    exit 1
  fi
  echo "image tests will be SKIPPED: $*" >&2
  return 1
}

engine_install() {
  command -v dockerd >/dev/null && command -v skopeo >/dev/null && return 0
  command -v apt-get >/dev/null || { engine_fail "dockerd/skopeo missing and no apt-get to install them"; return 1; }
  echo "image tests: installing docker.io and skopeo" >&2
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
  $sudo apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq docker.io skopeo >/dev/null ||
    { engine_fail "could not install docker.io and skopeo"; return 1; }
}

engine_start() {
  engine_install || return 1
  ENGINE_DIR=$(mktemp -d /tmp/clawc-engine.XXXXXX)
  local sock="$ENGINE_DIR/docker.sock"
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
  $sudo dockerd --host="unix://$sock" --data-root="$ENGINE_DIR/data" --exec-root="$ENGINE_DIR/exec" \
    --pidfile="$ENGINE_DIR/docker.pid" --storage-driver=vfs --iptables=false --ip6tables=false --bridge=none \
    >"$ENGINE_DIR/dockerd.log" 2>&1 &
  ENGINE_PID=$!
  export DOCKER_HOST="unix://$sock"
  local i
  for i in $(seq 1 60); do
    docker version >/dev/null 2>&1 && break
    kill -0 "$ENGINE_PID" 2>/dev/null || break
    sleep 0.5
  done
  if ! docker version >/dev/null 2>&1; then
    tail -20 "$ENGINE_DIR/dockerd.log" >&2
    unset DOCKER_HOST
    engine_fail "dockerd did not start"
    return 1
  fi
  if [ "${ENGINE_FIXTURES:-1}" = 1 ]; then
    engine_fixtures || { unset DOCKER_HOST; engine_fail "building the fixture images failed"; return 1; }
  fi
  export CLAWC_TEST_DOCKER_HOST="$DOCKER_HOST" CLAWC_TEST_IMAGES="$ENGINE_DIR/images"
  # Nothing else in the test run may reach this engine by accident.
  unset DOCKER_HOST
  echo "image tests: engine at $CLAWC_TEST_DOCKER_HOST, fixtures in $CLAWC_TEST_IMAGES" >&2
}

engine_fixtures() {
  local src ctx out
  src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fixtures"
  ctx="$ENGINE_DIR/contexts" out="$ENGINE_DIR/images"
  mkdir -p "$out" && cp -a "$src" "$ctx" || return 1
  # Symlinks go in through ADD of a tar (COPY follows them).
  mkdir -p "$ctx/links/api/svc" "$ctx/links/bad"
  ln -s ../opt/api/describe.json "$ctx/links/api/svc/api.claw-describe.json"
  ln -s ../../../../etc/passwd "$ctx/links/bad/escape.json"
  tar -cf "$ctx/api/links.tar" -C "$ctx/links/api" svc && tar -cf "$ctx/bad/links.tar" -C "$ctx/links/bad" escape.json || return 1
  # One byte over the 8 MiB limit.
  head -c $((8 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$ctx/bad/big.json"
  local b="docker build -q"
  export DOCKER_BUILDKIT=0
  {
    $b -t clawc-fixture/api:1 "$ctx/api" &&
      $b -t clawc-fixture/cached:1 --label claw.cache-test=1 "$ctx/api" &&
      $b -t clawc-fixture/mcp:1 "$ctx/mcp" &&
      $b -t clawc-fixture/both:1 "$ctx/both" &&
      $b -t clawc-fixture/collide:1 --label claw.tools=/claw/collide.json "$ctx/both" &&
      $b -t clawc-fixture/agent:1 "$ctx/agent" &&
      $b -t clawc-fixture/layered:1 "$ctx/layered" &&
      $b -t clawc-fixture/bad:json --label claw.describe=/bad.json "$ctx/bad" &&
      $b -t clawc-fixture/bad:dir --label claw.describe=/dir "$ctx/bad" &&
      $b -t clawc-fixture/bad:escape --label claw.describe=/escape.json "$ctx/bad" &&
      $b -t clawc-fixture/bad:big --label claw.describe=/big.json "$ctx/bad" &&
      $b -t clawc-fixture/bad:missing --label claw.describe=/nope.json "$ctx/bad"
  } >/dev/null 2>"$ENGINE_DIR/build.log" || { cat "$ENGINE_DIR/build.log" >&2; return 1; }
  local good="api:1 mcp:1 both:1 collide:1 agent:1 layered:1"
  local refs=() r
  for r in $good bad:json bad:dir bad:escape bad:big bad:missing; do refs+=("clawc-fixture/$r"); done
  # Daemonless fixtures: one OCI layout (skopeo) and archives (docker save).
  for r in "${refs[@]}"; do
    skopeo copy -q --src-daemon-host "$DOCKER_HOST" "docker-daemon:$r" "oci:$out/oci:$r" >/dev/null || return 1
  done
  docker save -o "$out/all.tar" "${refs[@]}" || return 1
  docker save -o "$out/good.tar" $(for r in $good; do echo "clawc-fixture/$r"; done) || return 1
  docker save -o "$out/agent-only.tar" clawc-fixture/agent:1 clawc-fixture/layered:1 || return 1
  # Damaged copies: a truncated archive and a layout with a truncated layer blob.
  head -c $(($(stat -c %s "$out/good.tar") / 2)) "$out/good.tar" >"$out/truncated.tar"
  cp -a "$out/oci" "$out/oci-damaged"
  local blob
  for blob in "$out"/oci-damaged/blobs/sha256/*; do
    [ "$(stat -c %s "$blob")" -gt 150 ] && head -c 100 "$blob" >"$blob.cut" && mv "$blob.cut" "$blob"
  done
  return 0
}

engine_stop() {
  [ -n "${ENGINE_PID:-}" ] || return 0
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
  $sudo kill "$ENGINE_PID" 2>/dev/null || true
  local i
  for i in $(seq 1 40); do kill -0 "$ENGINE_PID" 2>/dev/null || break; sleep 0.25; done
  # vfs layers and the exec root belong to root; a private engine leaves nothing behind.
  $sudo rm -rf "$ENGINE_DIR" 2>/dev/null || true
  ENGINE_PID=""
}

# After the tests: every temporary container clawc created must be gone.
engine_assert_clean() {
  [ -n "${CLAWC_TEST_DOCKER_HOST:-}" ] || return 0
  local left
  left=$(DOCKER_HOST=$CLAWC_TEST_DOCKER_HOST docker ps -aq --filter label=dev.clawc.temporary)
  [ -z "$left" ] || { echo "image tests: clawc left temporary containers behind: $left" >&2; return 1; }
  echo "image tests: no temporary container left behind" >&2
}
