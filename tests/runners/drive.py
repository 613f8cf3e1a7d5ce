#!/usr/bin/env python3
"""Drive one real runner CLI offline and report the MCP tools it exposes to its model.

    drive.py RUNNER AGENT_DIR EXPECT_FILE [--control] [--token SECRET] [--bare-server]
             [--keep] [-v]

RUNNER      codex | gemini | claude-code | opencode | openclaw | hermes | nanobot
AGENT_DIR   what the compiler emitted for one agent: runner.json, home/ (copied into a fresh
            HOME), project/ (optional, copied into a fresh working directory)
EXPECT_FILE expected model-visible MCP tool names, one per line ('#' comments allowed);
            '-' takes the names from AGENT_DIR/runner.json
--control   strip the tool filter from the copied config (test-only), to prove the harness
            would see a leak: the run is expected to FAIL with gamma and utility tools shown
--token S   start the MCP server requiring "Authorization: Bearer S" and export LOOP_TOKEN=S
--loop-token-env V  set LOOP_TOKEN=V instead of the --token secret ("" leaves it unset):
            a negative check that the header really comes from the environment
--bare-server  the MCP server offers tools only (no resource, no prompt)
--keep      keep the temp directory (printed) for inspection
-v          print the runner's raw findings (JSON) and log tails

Exit: 0 the MCP-derived tool names equal EXPECT_FILE; 1 they differ (a diff is printed);
2 the harness could not get a tool list (runner missing, crashed, timed out, ...).

Host side is Python 3 stdlib only. Everything runs inside `unshare --net --mount --pid`:
a new network namespace with only `lo` (plus the test address 172.31.255.10/32 on it), a
private tmpfs on /tmp, and a PID namespace so no runner process outlives the run.
"""

import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("CLAWC_RUNNER_CACHE", "/var/cache/clawc-runners")
RUNNERS = ["codex", "gemini", "claude-code", "opencode", "openclaw", "hermes", "nanobot"]

SERVICE = "loop"                      # the pod service name, as emitted in URLs
PORT = 18765
TEST_ADDR = "172.31.255.10"           # private address added to lo inside the namespace
LLM_ADDR, LLM_PORT = "127.0.0.1", 18900
LLM_URL = f"http://{LLM_ADDR}:{LLM_PORT}"
DNS_ADDR = "127.0.0.53"               # the DNS sink (dns_sink.py)
STEP_TIMEOUT = 90                     # every runner command
OUTER_TIMEOUT = 300                   # the whole namespace run

# Tool names that come from MCP resources/prompts rather than from a server's tools. They
# are reported together with the names containing the server name.
UTILITY = re.compile(
    r"(list_mcp_resource|read_mcp_resource|mcp_resource|McpResource|resources_(list|read)|"
    r"prompts_(list|get)|list_resources|read_resource|list_prompts|get_prompt)", re.I)


def mcp_derived(names):
    return sorted({n for n in names if SERVICE in n.lower() or UTILITY.search(n)})


# --------------------------------------------------------------------------------------
# Host side: prepare the temp HOME / working dir, run the namespace, compare.
# --------------------------------------------------------------------------------------

def deep_merge(base, overlay):
    """Merge overlay into base (dicts recursively; anything else is replaced)."""
    for k, v in overlay.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            deep_merge(base[k], v)
        else:
            base[k] = v
    return base


def rewrite_service_host(root):
    """The ONLY rewrite of emitted files: http://loop:18765/ -> http://TEST_ADDR:18765/."""
    old = f"http://{SERVICE}:{PORT}/".encode()
    new = f"http://{TEST_ADDR}:{PORT}/".encode()
    changed = []
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            with open(p, "rb") as fh:
                data = fh.read()
            if old in data:
                with open(p, "wb") as fh:
                    fh.write(data.replace(old, new))
                changed.append(os.path.relpath(p, root))
    return changed


def load_json(p):
    with open(p) as f:
        return json.load(f)


def save_json(p, obj):
    with open(p, "w") as f:
        json.dump(obj, f, indent=2)


def venv_python(runner):
    """The Python of a runner's venv (it has PyYAML, which the host side must not need)."""
    for d in sorted(os.listdir(os.path.join(CACHE, "venv"))):
        if d.startswith(runner + "@"):
            return os.path.join(CACHE, "venv", d, "bin", "python")
    raise SystemExit(f"drive: no venv for {runner} under {CACHE}/venv")


def yaml_edit(runner, path, code):
    """Edit a YAML file with the runner's own PyYAML: `code` sees/changes `doc`."""
    script = ("import sys, yaml\np = sys.argv[1]\n"
              "doc = yaml.safe_load(open(p)) or {}\n" + code +
              "\nyaml.safe_dump(doc, open(p, 'w'), sort_keys=False)\n")
    subprocess.run([venv_python(runner), "-c", script, path], check=True)


# Test-only additions. Environment variables where the runner reads them; where the runner
# has a single config file (nanobot's config.json), a deep-merge of the model provider ONLY
# into the copied file (to be replaced by `clawc merge` later).
def harness_setup(runner, home, harness):
    env, notes = {}, []
    if runner == "gemini":
        # GOOGLE_GEMINI_BASE_URL alone makes gemini 0.61 pick auth type "gateway", which
        # headless mode rejects ("Invalid auth method selected."): select the API-key auth
        # in a separate system-defaults file (lowest precedence; ~/.gemini untouched).
        p = os.path.join(harness, "gemini-system-defaults.json")
        save_json(p, {"security": {"auth": {"selectedType": "gemini-api-key"}}})
        env.update(GOOGLE_GEMINI_BASE_URL=LLM_URL, GEMINI_API_KEY="dummy",
                   GEMINI_CLI_SYSTEM_DEFAULTS_PATH=p)
        notes.append("auth type via GEMINI_CLI_SYSTEM_DEFAULTS_PATH=" + p)
    elif runner == "claude-code":
        env.update(ANTHROPIC_API_KEY="dummy", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   ANTHROPIC_BASE_URL=LLM_URL,
                   DISABLE_AUTOUPDATER="1")
    elif runner == "codex":
        env.update(CODEX_HOME=os.path.join(home, ".codex"))
    elif runner == "openclaw":
        env.update(OPENCLAW_CONFIG_PATH=os.path.join(home, ".openclaw", "openclaw.json"))
    elif runner == "opencode":
        # OPENCODE_CONFIG names an extra config file that opencode merges over the user's
        # ~/.config/opencode/opencode.json: the emitted file stays untouched.
        p = os.path.join(harness, "opencode-provider.json")
        save_json(p, {
            "provider": {"fake": {
                "npm": "@ai-sdk/openai-compatible", "name": "fake",
                "options": {"baseURL": LLM_URL + "/v1", "apiKey": "dummy"},
                "models": {"fake-model": {"name": "fake-model", "tool_call": True}}}},
            "model": "fake/fake-model", "small_model": "fake/fake-model",
            "autoupdate": False, "share": "disabled"})
        env.update(OPENCODE_CONFIG=p, OPENCODE_DISABLE_MODELS_FETCH="1",
                   OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_LSP_DOWNLOAD="1",
                   OPENCODE_DISABLE_DEFAULT_PLUGINS="1")
        notes.append("provider via OPENCODE_CONFIG=" + p)
    elif runner == "hermes":
        # Hermes reads the provider from env: no edit of config.yaml.
        env.update(HERMES_INFERENCE_PROVIDER="custom", HERMES_INFERENCE_MODEL="fake-model",
                   CUSTOM_BASE_URL=LLM_URL + "/v1", OPENAI_API_KEY="dummy")
    elif runner == "nanobot":
        # nanobot validates config.json with model_validate, which ignores NANOBOT_* env vars
        # once a file exists, so the model provider must be in the file: it is the user's
        # own config, and the emitted file is merged into it with `clawc merge` (as a user
        # would) when $CLAWC names the binary, else deep-merged here.
        p = os.path.join(home, ".nanobot", "config.json")
        provider = {"agents": {"defaults": {"model": "fake-model", "provider": "custom"}},
                    "providers": {"custom": {"apiBase": LLM_URL + "/v1", "apiKey": "dummy"}}}
        clawc = os.environ.get("CLAWC")
        if clawc and os.path.exists(p):
            frag = os.path.join(harness, "fragment", "home", ".nanobot", "config.json")
            os.makedirs(os.path.dirname(frag))
            shutil.move(p, frag)
            save_json(p, provider)
            subprocess.run([clawc, "merge", frag, p], check=True, stdout=subprocess.DEVNULL)
            notes.append("emitted config merged into the user's (provider) with clawc merge")
        else:
            cfg = load_json(p) if os.path.exists(p) else {}
            deep_merge(cfg, provider)
            save_json(p, cfg)
            notes.append("provider deep-merged into ~/.nanobot/config.json")
    return env, notes


def strip_filter(runner, home):
    """--control: remove the tool filter from the copied config (test-only)."""
    if runner == "codex":
        p = os.path.join(home, ".codex", "config.toml")
        text = open(p).read()
        text = re.sub(r"(?ms)^\s*(enabled_tools|disabled_tools)\s*=\s*\[.*?\]\s*$\n?", "", text)
        open(p, "w").write(text)
    elif runner == "gemini":
        p = os.path.join(home, ".gemini", "settings.json")
        cfg = load_json(p)
        for s in cfg.get("mcpServers", {}).values():
            s.pop("includeTools", None)
            s.pop("excludeTools", None)
        save_json(p, cfg)
    elif runner == "claude-code":
        p = os.path.join(home, ".claude", "settings.json")
        cfg = load_json(p)
        cfg.get("permissions", {}).pop("deny", None)
        save_json(p, cfg)
    elif runner == "opencode":
        p = os.path.join(home, ".config", "opencode", "opencode.json")
        cfg = load_json(p)
        cfg.pop("tools", None)
        cfg.pop("permission", None)
        save_json(p, cfg)
    elif runner == "openclaw":
        p = os.path.join(home, ".openclaw", "openclaw.json")
        cfg = load_json(p)
        for s in cfg.get("mcp", {}).get("servers", {}).values():
            s.pop("toolFilter", None)
        save_json(p, cfg)
    elif runner == "hermes":
        yaml_edit("hermes", os.path.join(home, ".hermes", "config.yaml"),
                  "for s in (doc.get('mcp_servers') or {}).values():\n    s.pop('tools', None)")
    elif runner == "nanobot":
        p = os.path.join(home, ".nanobot", "config.json")
        cfg = load_json(p)
        for s in cfg.get("tools", {}).get("mcpServers", {}).values():
            s["enabledTools"] = ["*"]
        save_json(p, cfg)


def compact(x, width=400):
    """A copy of x with long strings and lists shortened, for -v output."""
    if isinstance(x, dict):
        return {k: compact(v, width) for k, v in x.items()}
    if isinstance(x, list):
        return [compact(v, width) for v in x[:40]] + ([f"... {len(x) - 40} more"]
                                                      if len(x) > 40 else [])
    if isinstance(x, str) and len(x) > width:
        return x[:width] + f"... ({len(x)} chars)"
    return x


def read_expect(path, agent_dir):
    if path == "-":  # the names runner.json promises
        return sorted({t["name"] for t in load_json(os.path.join(agent_dir, "runner.json"))
                       .get("tools", [])})
    with open(path) as f:
        return sorted({l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")})


def host_main(args):
    opts = {"control": False, "token": None, "keep": False, "verbose": False, "bare": False,
            "token_env": None}
    pos = []
    it = iter(args)
    for a in it:
        if a == "--control":
            opts["control"] = True
        elif a == "--token":
            opts["token"] = next(it)
        elif a == "--loop-token-env":
            opts["token_env"] = next(it)
        elif a == "--bare-server":
            opts["bare"] = True
        elif a == "--keep":
            opts["keep"] = True
        elif a in ("-v", "--verbose"):
            opts["verbose"] = True
        elif a.startswith("-") and a != "-":
            raise SystemExit(f"drive: unknown option {a}\n" + __doc__)
        else:
            pos.append(a)
    if len(pos) != 3:
        raise SystemExit(__doc__)
    runner, agent_dir, expect_file = pos
    if runner not in RUNNERS:
        raise SystemExit(f"drive: unknown runner {runner} (known: {' '.join(RUNNERS)})")
    exe = os.path.join(CACHE, "bin", runner)
    if not os.access(exe, os.X_OK):
        print(f"drive: {runner} is not installed ({exe}); run tests/runners/install.sh",
              file=sys.stderr)
        return 2
    expected = read_expect(expect_file, agent_dir)
    tag = runner + "".join(f" --{k}" for k in ("control", "token", "bare") if opts[k])

    # Not under /tmp or /var/tmp: Gemini refuses a settings file below a world-writable
    # directory, and /tmp is replaced by a private tmpfs inside the namespace.
    tmpbase = os.environ.get("CLAWC_RUNNER_TMP", os.path.join(CACHE, "tmp"))
    os.makedirs(tmpbase, mode=0o700, exist_ok=True)
    if runner == "gemini":
        d = os.path.realpath(tmpbase)
        while d != "/":
            d = os.path.dirname(d)
            if os.stat(d).st_mode & 0o022:
                print(f"drive: {tmpbase} lies below {d}, which is group/world-writable; Gemini "
                      "ignores settings files there: set CLAWC_RUNNER_TMP (or "
                      "CLAWC_RUNNER_CACHE) elsewhere", file=sys.stderr)
                return 2
    T = tempfile.mkdtemp(prefix=f"clawc-runner-{runner}-", dir=tmpbase)
    home, work = os.path.join(T, "home"), os.path.join(T, "work")
    harness, logs, tmp = (os.path.join(T, d) for d in ("harness", "logs", "tmp"))
    for d in (home, work, harness, logs, tmp):
        os.makedirs(d)
    if os.path.isdir(os.path.join(agent_dir, "home")):
        shutil.copytree(os.path.join(agent_dir, "home"), home, symlinks=True, dirs_exist_ok=True)
    if os.path.isdir(os.path.join(agent_dir, "project")):
        shutil.copytree(os.path.join(agent_dir, "project"), work, symlinks=True,
                        dirs_exist_ok=True)
    rewritten = rewrite_service_host(home) + rewrite_service_host(work)
    env, notes = harness_setup(runner, home, harness)
    if opts["control"]:
        strip_filter(runner, home)
        notes.append("control: tool filter stripped")
    if opts["token"]:
        env["LOOP_TOKEN"] = opts["token"]
    if opts["token_env"] is not None:
        env.pop("LOOP_TOKEN", None)
        if opts["token_env"]:
            env["LOOP_TOKEN"] = opts["token_env"]
    spec = {"runner": runner, "T": T, "home": home, "work": work, "logs": logs, "tmp": tmp,
            "env": env, "token": opts["token"], "bare": opts["bare"]}
    save_json(os.path.join(T, "spec.json"), spec)

    t0 = time.time()
    cmd = ["timeout", "-k", "5", str(OUTER_TIMEOUT), "unshare", "--net", "--mount", "--pid",
           "--fork", "--mount-proc", "--kill-child", sys.executable, os.path.abspath(__file__),
           "--inner", os.path.join(T, "spec.json")]
    with open(os.path.join(logs, "inner.log"), "w") as lf:
        rc = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT).returncode
    took = time.time() - t0
    res_path = os.path.join(T, "result.json")
    result = load_json(res_path) if os.path.exists(res_path) else None

    def tail(name, n=30):
        p = os.path.join(logs, name)
        if os.path.exists(p):
            lines = open(p, errors="replace").read().splitlines()[-n:]
            print(f"--- {name} (last {len(lines)} lines)")
            print("\n".join(lines))

    status = 2
    if result is None or result.get("error"):
        print(f"drive {tag}: ERROR after {took:.1f}s (namespace rc={rc}): "
              f"{(result or {}).get('error', 'no result written')}")
        for n in ("inner.log", "runner.stderr", "runner.stdout", "mcp.stderr"):
            tail(n)
    else:
        seen = mcp_derived(result["names"])
        print(f"# {tag}: {len(result['names'])} model-visible tools, MCP-derived:")
        for n in seen:
            print(n)
        if seen == expected:
            status = 0
            print(f"drive {tag}: OK ({took:.1f}s)")
        else:
            status = 1
            print(f"drive {tag}: MISMATCH ({took:.1f}s)")
            for n in sorted(set(expected) | set(seen)):
                mark = " " if (n in expected) == (n in seen) else ("-" if n in expected else "+")
                print(f"  {mark} {n}")
            print("  (- expected but not shown, + shown but not expected)")
    if opts["verbose"] and result:
        print(json.dumps(compact(result), indent=1))
        print("rewritten:", rewritten, "notes:", notes)
    if opts["keep"] or (status == 2 and os.environ.get("CLAWC_RUNNER_KEEP_FAILED")):
        print(f"kept: {T}")
    else:
        shutil.rmtree(T, ignore_errors=True)
    return status


# --------------------------------------------------------------------------------------
# Inner side: runs as PID 1 of the new namespaces.
# --------------------------------------------------------------------------------------

class Proc:
    """A process with a line reader thread on stdout (for JSON-lines protocols)."""

    def __init__(self, argv, env, cwd, stderr_path):
        self.err = open(stderr_path, "ab")
        self.p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err,
                                  start_new_session=True)
        self.q = queue.Queue()
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.p.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            try:
                self.q.put(json.loads(line))
            except ValueError:
                pass
        self.q.put(None)

    def send(self, obj):
        self.p.stdin.write((json.dumps(obj) + "\n").encode())
        self.p.stdin.flush()

    def wait_for(self, pred, deadline):
        while time.time() < deadline:
            try:
                m = self.q.get(timeout=max(0.05, min(1.0, deadline - time.time())))
            except queue.Empty:
                continue
            if m is None:
                raise RuntimeError(f"process exited (rc={self.p.poll()}) while waiting")
            if isinstance(m, dict) and pred(m):
                return m
        raise TimeoutError("timed out waiting for the runner")

    def kill(self):
        try:
            os.killpg(self.p.pid, 9)
        except ProcessLookupError:
            pass
        self.p.wait()


def run(spec, env, argv, name="runner", timeout=STEP_TIMEOUT):
    """Run a command with a timeout; stdout/stderr go to logs/<name>.stdout/.stderr."""
    out_p = os.path.join(spec["logs"], name + ".stdout")
    err_p = os.path.join(spec["logs"], name + ".stderr")
    t0 = time.time()
    with open(out_p, "wb") as out, open(err_p, "wb") as err:
        p = subprocess.Popen(argv, env=env, cwd=spec["work"], stdin=subprocess.DEVNULL,
                             stdout=out, stderr=err, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            rc = "timeout"
    return {"argv": argv[1:], "rc": rc, "secs": round(time.time() - t0, 1),
            "stdout": open(out_p, errors="replace").read(),
            "stderr": open(err_p, errors="replace").read()}


def llm_requests(spec):
    p = os.path.join(spec["logs"], "llm.jsonl")
    if not os.path.exists(p):
        return []
    return [json.loads(l) for l in open(p) if l.strip()]


def llm_tool_names(spec):
    reqs = [r for r in llm_requests(spec) if r.get("api") in ("openai", "gemini")]
    if not reqs:
        raise RuntimeError("the runner sent no request to the fake LLM")
    names = set()
    for r in reqs:
        names.update(r["tools"])
    return sorted(names), [sorted(r["tools"]) for r in reqs]


def json_in(text):
    """The first JSON object in text that may have log lines around it."""
    dec = json.JSONDecoder()
    for i, c in enumerate(text):
        if c == "{":
            try:
                return dec.raw_decode(text[i:])[0]
            except ValueError:
                continue
    raise ValueError("no JSON object in output")


def probe_codex(spec, env, exe):
    raw = {}
    p = Proc([exe, "app-server"], env, spec["work"], os.path.join(spec["logs"], "runner.stderr"))
    deadline = time.time() + STEP_TIMEOUT
    try:
        p.send({"id": 1, "method": "initialize",
                "params": {"clientInfo": {"name": "clawc-harness", "version": "0"}}})
        p.wait_for(lambda m: m.get("id") == 1, deadline)
        p.send({"method": "initialized"})
        rid = 1
        while True:
            rid += 1
            p.send({"id": rid, "method": "mcpServerStatus/list", "params": {}})
            m = p.wait_for(lambda m, r=rid: m.get("id") == r, deadline)
            raw["mcpServerStatus/list"] = m
            data = (m.get("result") or {}).get("data") or []
            srv = [s for s in data if s.get("name") == SERVICE]
            if srv and (srv[0].get("tools") or srv[0].get("toolsError")):
                break
            if time.time() > deadline:
                raise TimeoutError("codex: no tools for the server")
            time.sleep(0.5)
    finally:
        p.kill()
    srv = srv[0]
    tools = sorted((srv.get("tools") or {}).keys())
    raw["tool_keys"] = tools
    raw["toolsError"] = srv.get("toolsError")
    raw["resources"] = srv.get("resources")
    raw["resourceTemplates"] = srv.get("resourceTemplates")
    # What the model is told: `codex debug prompt-input` (offline) prints the request input.
    # Codex 0.169 defers MCP tools: the prompt lists "Deferred tool namespaces: - mcp__loop"
    # and its `exec` tool reaches them as `tools.mcp__loop__alpha(...)` (normalized JS names).
    dbg = run(spec, env, [exe, "debug", "prompt-input", "hi"], name="codex-prompt-input")
    text = dbg["stdout"].replace("\\n", "\n")
    deferred = []
    for block in re.findall(r"Deferred tool namespaces:\n((?:- [^\n\\\"]+\n?)+)", text):
        deferred += [l[2:].strip() for l in block.splitlines() if l.startswith("- ")]
    raw["prompt_input_deferred_namespaces"] = sorted(set(deferred))
    raw["prompt_input_loop_names"] = sorted(set(re.findall(r"\bmcp__loop__\w+", text)))
    ns = f"mcp__{SERVICE}"
    raw["model_visible_form"] = (f"namespace {ns} (deferred) holding tool keys {tools}; "
                                 f"reported as {ns}__<tool>")
    if ns not in deferred and not raw["prompt_input_loop_names"]:
        raw["note"] = f"{ns} neither deferred nor listed in prompt-input"
    # list_mcp_resources, list_mcp_resource_templates and read_mcp_resource are Codex
    # built-ins: they are in the prompt even with no MCP server configured, so they are not
    # counted as derived from this server (see README).
    raw["codex_builtin_resource_tools"] = [u for u in ("list_mcp_resources",
                                           "list_mcp_resource_templates", "read_mcp_resource")
                                           if u in text]
    names = sorted(set([f"{ns}__{t}" for t in tools] + raw["prompt_input_loop_names"]))
    return names, raw


def probe_gemini(spec, env, exe):
    r = run(spec, env, [exe, "-p", "hi", "-m", "gemini-2.5-flash"])
    raw = {"run": {k: r[k] for k in ("argv", "rc", "secs")}, "stdout": r["stdout"][-2000:],
           "stderr": r["stderr"][-3000:]}
    names, per_req = llm_tool_names(spec)
    raw["requests"] = per_req
    return names, raw


def probe_claude(spec, env, exe):
    raw = {}
    p = Proc([exe, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
              "--verbose"], env, spec["work"], os.path.join(spec["logs"], "runner.stderr"))
    deadline = time.time() + STEP_TIMEOUT
    try:
        p.send({"type": "control_request", "request_id": "i1",
                "request": {"subtype": "initialize"}})
        p.wait_for(lambda m: m.get("type") == "control_response", deadline)
        raw["secs_to_initialize"] = round(time.time() - deadline + STEP_TIMEOUT, 1)
        n = 0
        while True:
            n += 1
            p.send({"type": "control_request", "request_id": f"s{n}",
                    "request": {"subtype": "mcp_status"}})
            m = p.wait_for(lambda m, r=f"s{n}": m.get("type") == "control_response" and
                           (m.get("response") or {}).get("request_id") == r, deadline)
            servers = ((m.get("response") or {}).get("response") or {}).get("mcpServers") or []
            raw["mcp_status"] = servers
            st = [s for s in servers if s.get("name") == SERVICE]
            if st and st[0].get("status") != "pending":
                break
            if not st and n >= 4:  # no such server configured: go on with what there is
                break
            time.sleep(0.5)
        raw["secs_to_mcp_status"] = round(time.time() - deadline + STEP_TIMEOUT, 1)
        p.send({"type": "user", "message": {"role": "user", "content": "hi"}})
        init = p.wait_for(lambda m: m.get("type") == "system" and m.get("subtype") == "init",
                          deadline)
    finally:
        p.kill()
        raw["stdout_tail"] = p.lines[-5:]
    raw["secs_to_init"] = round(time.time() - deadline + STEP_TIMEOUT, 1)
    raw["init_mcp_servers"] = init.get("mcp_servers")
    raw["init_tools"] = init.get("tools")
    return init.get("tools") or [], raw


def probe_opencode(spec, env, exe):
    r = run(spec, env, [exe, "run", "hi"])
    raw = {"run": {k: r[k] for k in ("argv", "rc", "secs")}, "stdout": r["stdout"][-2000:],
           "stderr": r["stderr"][-3000:]}
    names, per_req = llm_tool_names(spec)
    raw["requests"] = per_req
    return names, raw


def probe_openclaw(spec, env, exe):
    v = run(spec, env, [exe, "config", "validate", "--json"], name="openclaw-validate")
    raw = {"config_validate": {"rc": v["rc"], "stdout": v["stdout"][-3000:],
                               "stderr": v["stderr"][-2000:]}}
    r = run(spec, env, [exe, "mcp", "probe", "--json"])
    raw["probe"] = {"rc": r["rc"], "secs": r["secs"]}
    try:
        out = json_in(r["stdout"])
    except ValueError:
        raise RuntimeError(f"openclaw mcp probe printed no JSON (rc={r['rc']}): "
                           f"{r['stderr'][-800:]}")
    raw["probe_json"] = out
    return out.get("tools") or [], raw


def probe_hermes(spec, env, exe):
    ml = run(spec, env, [exe, "mcp", "list"], name="hermes-mcp-list")
    raw = {"mcp_list": ml["stdout"][-2000:]}
    sel = re.search(r"\b(\d+ selected|all)\b", ml["stdout"])
    raw["mcp_list_tools_column"] = sel.group(1) if sel else None
    r = run(spec, env, [exe, "-z", "hi"])
    raw.update(run={k: r[k] for k in ("argv", "rc", "secs")}, stdout=r["stdout"][-2000:],
               stderr=r["stderr"][-3000:])
    names, per_req = llm_tool_names(spec)
    raw["requests"] = per_req
    return names, raw


def probe_nanobot(spec, env, exe):
    r = run(spec, env, [exe, "agent", "-m", "hi", "--no-markdown", "--logs"])
    raw = {"run": {k: r[k] for k in ("argv", "rc", "secs")}, "stdout": r["stdout"][-2000:],
           "stderr_mcp": [l for l in (r["stderr"] + r["stdout"]).splitlines()
                          if "MCP" in l or "mcp" in l][:20]}
    names, per_req = llm_tool_names(spec)
    raw["requests"] = per_req
    return names, raw


PROBES = {"codex": probe_codex, "gemini": probe_gemini, "claude-code": probe_claude,
          "opencode": probe_opencode, "openclaw": probe_openclaw, "hermes": probe_hermes,
          "nanobot": probe_nanobot}


def wait_port(host, port, secs):
    end = time.time() + secs
    while time.time() < end:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def private_tmp(keep):
    """Mount a tmpfs on /tmp; paths in `keep` that lie under the old /tmp (a cache, the temp
    dir or the harness itself under /tmp) are bound back from the old /tmp, reached through
    a directory fd opened before the overmount."""
    keep = sorted({os.path.realpath(p) for p in keep})
    under = [p for p in keep if p.startswith("/tmp/")]
    under = [p for p in under if not any(p.startswith(q + "/") for q in under)]
    fd = os.open("/tmp", os.O_RDONLY | os.O_DIRECTORY) if under else None
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g,mode=1777", "tmpfs", "/tmp"],
                   check=True)
    for p in under:
        os.makedirs(p, exist_ok=True)
        # --no-canonicalize: mount(8) would otherwise resolve the fd link to the path "/tmp"
        # and bind the new, empty directory onto itself.
        subprocess.run(["mount", "--no-canonicalize", "--bind",
                        f"/proc/self/fd/{fd}/{os.path.relpath(p, '/tmp')}", p],
                       pass_fds=(fd,), check=True)
    if fd is not None:
        os.close(fd)


def inner_main(spec_path):
    spec = load_json(spec_path)
    result = {"runner": spec["runner"]}
    try:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", "addr", "add", f"{TEST_ADDR}/32", "dev", "lo"], check=True)
        # A private /tmp for runners that ignore TMPDIR (OpenClaw, OpenCode, Claude).
        private_tmp([CACHE, spec["T"], HERE])
        logs = spec["logs"]
        # Lookups go to a DNS sink on loopback that answers NXDOMAIN at once and logs names.
        resolv = os.path.join(spec["T"], "harness", "resolv.conf")
        with open(resolv, "w") as f:
            f.write(f"nameserver {DNS_ADDR}\noptions timeout:1 attempts:1\n")
        subprocess.run(["mount", "--bind", resolv, "/etc/resolv.conf"], check=True)
        dns = subprocess.Popen([sys.executable, os.path.join(HERE, "dns_sink.py"), DNS_ADDR,
                                os.path.join(logs, "dns.jsonl")],
                               stdout=open(os.path.join(logs, "dns.stderr"), "wb"),
                               stderr=subprocess.STDOUT)
        mcp_argv = [os.path.join(CACHE, "bin", "mcp-python"), os.path.join(HERE, "mcp_server.py"),
                    TEST_ADDR, str(PORT), os.path.join(logs, "mcp.jsonl")]
        if spec.get("token"):
            mcp_argv += ["--token", spec["token"]]
        if spec.get("bare"):
            mcp_argv.append("--bare")
        servers = [
            subprocess.Popen(mcp_argv, stdout=open(os.path.join(logs, "mcp.stderr"), "wb"),
                             stderr=subprocess.STDOUT),
            subprocess.Popen([sys.executable, os.path.join(HERE, "fake_llm.py"), LLM_ADDR,
                              str(LLM_PORT), os.path.join(logs, "llm.jsonl")],
                             stdout=open(os.path.join(logs, "llm.stderr"), "wb"),
                             stderr=subprocess.STDOUT)]
        if not wait_port(TEST_ADDR, PORT, 30):
            raise RuntimeError("MCP server did not start: " +
                               open(os.path.join(logs, "mcp.stderr")).read()[-1500:])
        if not wait_port(LLM_ADDR, LLM_PORT, 10):
            raise RuntimeError("fake LLM did not start")
        env = {
            "PATH": os.path.join(CACHE, "bin") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:"
                    "/usr/bin:/sbin:/bin",
            "HOME": spec["home"], "TMPDIR": spec["tmp"], "USER": "root", "LOGNAME": "root",
            "SHELL": "/bin/bash", "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1",
            "CI": "true",
        }
        env.update(spec["env"])
        runner = spec["runner"]
        t0 = time.time()
        names, raw = PROBES[runner](spec, env, os.path.join(CACHE, "bin", runner))
        result.update(names=sorted(set(names)), raw=raw, secs=round(time.time() - t0, 1))
    except Exception as e:  # reported by the host side
        result["error"] = f"{type(e).__name__}: {e}"
        print("inner:", result["error"], flush=True)  # also in logs/inner.log
    try:
        dlog = os.path.join(spec["logs"], "dns.jsonl")
        result["dns_lookups"] = sorted({json.loads(l)["name"] for l in open(dlog)}) \
            if os.path.exists(dlog) else []
    except Exception as e:
        result["dns_log_error"] = str(e)
    try:
        mlog = os.path.join(spec["logs"], "mcp.jsonl")
        entries = [json.loads(l) for l in open(mlog)] if os.path.exists(mlog) else []
        result["mcp_methods"] = [m for e in entries for m in e["methods"]]
        result["mcp_auth"] = sorted({e["auth"] for e in entries})
        result["mcp_auth_headers"] = sorted({str(e.get("auth_header")) for e in entries})
        result["mcp_user_agents"] = sorted({e["ua"] for e in entries})
    except Exception as e:
        result["mcp_log_error"] = str(e)
    save_json(os.path.join(spec["T"], "result.json"), result)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--inner":
        sys.exit(inner_main(sys.argv[2]))
    sys.exit(host_main(sys.argv[1:]))
