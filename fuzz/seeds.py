#!/usr/bin/env python3
"""Writes the hand-made seed inputs (`edge-*`) of fuzz/corpus/<target>/.

The other seeds are copies of examples/, tests/cases/ and tests/images/fixtures/
inputs, and `fuzz-*`: inputs `cargo fuzz run` found that add coverage (a few per
target, picked from a set-cover merge on edges). Run from the repository root:
    python3 fuzz/seeds.py            # the edge-* seeds
    python3 fuzz/seeds.py --crash    # also the crash-* known failures (needs `zstd`)
Deterministic: the same files every time (tar mtimes fixed at 0).
"""

import gzip
import io
import json
import os
import tarfile

# No 10 KiB record padding: keeps the tar seeds small (an end of two zero blocks stays).
tarfile.RECORDSIZE = 1024

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, "edge-" + name), "wb") as f:
        f.write(data)


# --- pod -------------------------------------------------------------------------------

MINIMAL = """x-claw:
  pod: p
services:
  a:
    image: a
    x-claw:
      cllama: passthrough
      tools: [t]
  t:
    image: t
"""

laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
for i in range(1, 10):
    prev = "a" * i
    cur = "a" * (i + 1)
    laughs += f"{cur}: &{cur} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
put("pod", "alias-bomb.yml", laughs)
put("pod", "alias-bomb-in-services.yml", "x-claw: &x {pod: p}\nservices:\n  a: &a {image: a, x-claw: *x}\n  b: *a\n  c: {<<: [*a, *a, *a]}\n")
put("pod", "deep-flow.yml", "services: " + "[" * 200 + "]" * 200 + "\n")
put("pod", "deep-flow-unclosed.yml", "services: " + "{a: " * 300 + "\n")
put("pod", "deep-block.yml", "services:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(100)))
put("pod", "bom.yml", "\ufeff" + MINIMAL)
put("pod", "bom-twice.yml", "\ufeff\ufeff" + MINIMAL)
put("pod", "nul.yml", MINIMAL.replace("image: t", "image: t\0x"))
put("pod", "nul-only.yml", b"\0\0\0\0")
put("pod", "invalid-utf8.yml", MINIMAL.encode().replace(b"image: a", b"image: \xff\xfe\xc3"))
put("pod", "crlf.yml", MINIMAL.replace("\n", "\r\n"))
put("pod", "tabs.yml", MINIMAL.replace("  ", "\t"))
put("pod", "empty.yml", "")
put("pod", "null-doc.yml", "~\n")
put("pod", "scalar-doc.yml", "just a string\n")
put("pod", "multi-doc.yml", MINIMAL + "---\n" + MINIMAL)
put("pod", "duplicate-keys.yml", "services:\n  a: {image: a}\n  a: {image: b}\nservices: {}\n")
put("pod", "merge-keys.yml",
    "x-base: &b\n  image: a\n  x-claw: {cllama: passthrough}\nservices:\n  a:\n    <<: *b\n    <<: [*b, {image: c}]\n  m:\n    <<: 3\n")
put("pod", "tags.yml", "services: !!map\n  a: !!str {image: a}\n  b: !custom {image: b}\n  c: {image: !!binary aGVsbG8=}\n")
put("pod", "anchors-everywhere.yml", "&r services: &s\n  &k a: &v {&i image: &j a}\n  b: *v\n  *k : 1\n")
put("pod", "interpolation.yml", """x-claw:
  pod: ${A:-${B:-${C:-${D:-x}}}}
services:
  a:
    image: ${TOKEN}${PORT:?need}${EMPTY:+y}$${LITERAL}${
    environment: [TOKEN, "X=${UNSET:?unset}", "Y=$$", "Z=${}", "W=${A-}", "V=$"]
    x-claw:
      cllama: ${EMPTY:-passthrough}
      count: ${PORT}
      feeds: ["scoped-{claw_id}", "{claw_id}{claw_id}{claw_}"]
""")
put("pod", "count-huge.yml", MINIMAL.replace("cllama: passthrough", "cllama: passthrough\n      count: 99999999999999999999"))
put("pod", "count-large.yml", MINIMAL.replace("cllama: passthrough", "cllama: passthrough\n      count: 100000"))
put("pod", "count-negative.yml", MINIMAL.replace("cllama: passthrough", "cllama: passthrough\n      count: -1"))
put("pod", "spread-defaults.yml", """x-claw:
  pod: p
  tools-defaults: [t, ..., ...]
  feeds-defaults: [...]
  memory-defaults: {service: t, ...: ...}
services:
  a:
    image: a
    x-claw:
      cllama: passthrough
      tools: [..., t, ...]
      feeds: [..., {source: t, path: /x, ttl: 0}]
      tool-policy: {t: {allow: [...]}}
  t:
    image: t
    expose: ["8080", "65536", "-1", "0x50", "80-90/udp", ""]
    ports: ["1:2:3:4", {target: 99999999999}]
""")
put("pod", "weird-keys.yml", "? [a, b]\n: c\n? {x: y}\n: z\nservices:\n  ? [1]\n  : {image: a}\n  \"\": {image: b}\n")
put("pod", "long-line.yml", "services:\n  a:\n    image: " + "x" * 20000 + "\n")
put("pod", "truncated-quote.yml", 'services:\n  a:\n    image: "unterminated\n')
put("pod", "unicode.yml", MINIMAL.replace("a:\n", "\u00e4\u0301\U0001f600:\n").replace("pod: p", "pod: \u202e\u0000"))

# --- descriptor --------------------------------------------------------------------------

put("descriptor", "empty.json", "")
put("descriptor", "null.json", "null")
put("descriptor", "bom.json", "\ufeff{\"version\": 2, \"description\": \"x\"}")
put("descriptor", "deep-array.json", "[" * 5000 + "]" * 5000)
put("descriptor", "deep-schema.json",
    json.dumps({"version": 2, "description": "d", "mcp": {"path": "/m"},
                "tools": [{"name": "t", "description": "d", "inputSchema": json.loads('{"type":"object","properties":{"a":' * 60 + '{}' + '}}' * 60)}]}))
put("descriptor", "regex-schema.json", json.dumps({
    "version": 2, "description": "d", "mcp": {"path": "/m"},
    "tools": [{"name": "t", "description": "d", "inputSchema": {
        "type": "object", "properties": {"a": {"type": "string", "pattern": "(a+)+$"}},
        "patternProperties": {"(?=x)(?<=y)\\p{L}{1000000}": {}},
        "$ref": "#/properties/a", "$defs": {"l": {"$ref": "#/$defs/l"}}}}]}))
put("descriptor", "remote-ref.json", json.dumps({
    "version": 2, "description": "d", "mcp": {"path": "/m"},
    "tools": [{"name": "t", "description": "d", "inputSchema": {"$ref": "http://169.254.169.254/latest"}},
              {"name": "u", "description": "d", "inputSchema": {"$ref": "file:///etc/passwd"}}]}))
put("descriptor", "case-fields.json", '{"VERSION": 2, "Description": "x", "version": 1, "TOOLS": [{"NAME": "a", "name": "b"}]}')
put("descriptor", "duplicate-keys.json", '{"version": 2, "version": 1, "description": "a", "description": 3}')
put("descriptor", "huge-numbers.json",
    '{"version": 1e400, "description": "d", "feeds": [{"name": "f", "path": "/f", "ttl": 18446744073709551616}, {"name": "g", "path": "/g", "ttl": -0.5e-400}]}')
put("descriptor", "nul-and-escapes.json", '{"version": 2, "description": "\\u0000\\ud800\\udfff\\ud800", "tools": [{"name": "\\u0000", "description": "\\"", "http": {"method": "\\u0047ET", "path": "\\\\"}}]}')
put("descriptor", "invalid-utf8.json", b'{"version": 2, "description": "\xff\xc0\x80"}')
put("descriptor", "trailing.json", '{"version": 2, "description": "d"} {"again": 1}')
put("descriptor", "all-fields.json", json.dumps({
    "version": 2, "description": "All.", "skill": "../../../etc/passwd",
    "auth": {"type": "bearer", "env": "TOKEN"},
    "endpoints": [{"method": "GET", "path": "/x"}, {"method": "", "path": ""}],
    "feeds": [{"name": "prices", "path": "/p?q=<a>&b", "ttl": 1, "description": "p"},
              {"name": "scoped-{claw_id}", "path": "/s/{claw_id}", "ttl": 0},
              {"name": "prices", "path": "/dup", "ttl": 5}],
    "memory": {"path": "/mem", "recall": "/r", "retain": "/w"},
    "mcp": {"path": "/mcp"},
    "tools": [{"name": "t", "description": "", "inputSchema": {"type": "object"}, "annotations": {"readOnly": True, "readOnlyHint": "yes"}},
              {"name": "t", "description": "dup", "inputSchema": True}]}))

# --- snapshot ----------------------------------------------------------------------------

put("snapshot", "bare-array.json", '[{"name": " a ", "description": " "}, {"name": "b", "inputSchema": null, "annotations": null}]')
put("snapshot", "next-cursor.json", '{"tools": [], "nextCursor": ""}')
put("snapshot", "next-cursor-set.json", '{"tools": [{"name": "x"}], "nextCursor": {"page": 2}}')
put("snapshot", "tools-not-array.json", '{"tools": {"name": "x"}}')
put("snapshot", "not-object-tool.json", '[1, "two", null]')
put("snapshot", "schema-not-object.json", '[{"name": "a", "inputSchema": [1, 2]}, {"name": "b", "inputSchema": "string"}, {"name": "c", "inputSchema": {"type": "array"}}]')
put("snapshot", "duplicate-names.json", '{"tools": [{"name": "a"}, {"name": "a "}, {"name": ""}, {"name": 7}]}')
put("snapshot", "deep.json", '{"tools": [{"name": "a", "inputSchema": ' + '{"items": ' * 120 + '{}' + '}' * 120 + '}]}')
put("snapshot", "bom.json", '\ufeff{"tools": []}')
put("snapshot", "empty.json", "")
put("snapshot", "unicode-names.json", '{"tools": [{"name": "\\u202e\\u0000\ud83d\ude00", "description": "\\u0000"}]}'.encode("utf-8", "surrogatepass"))

# --- dotenv ------------------------------------------------------------------------------

put("dotenv", "rules.env", "# c\nexport A=1\nB='x #y $Z'\nC=\"a\\nb\\\"c\\$d\"\nD=v # comment\nE=v#kept\nF=\n")
put("dotenv", "bad-lines.env", "not a var\n1A=2\n=empty\nexport\nexport =x\n A B = c\n")
put("dotenv", "unterminated.env", "A=\"never closed\\\nB='also\nC=\"\\")
put("dotenv", "crlf.env", "A=1\r\nB=\"2\"\r\n\r\n#x\r\n")
put("dotenv", "bom.env", "\ufeffA=1\n")
put("dotenv", "nul.env", "A=\0\nB\0=1\n\0\n")
put("dotenv", "invalid-utf8.env", b"A=\xff\xfe\nB=\xc3\x28\n")
put("dotenv", "multibyte.env", "\u00c4=1\nA=\u00e4\u0301 #\u00e4\nB='\U0001f600\nC=\"\\\U0001f600\"\n")
put("dotenv", "no-newline.env", "A=1")
put("dotenv", "long-value.env", "A=" + "x" * 10000 + "\n")
put("dotenv", "many-lines.env", "".join(f"V{i}=value {i} # c\n" for i in range(400)))
put("dotenv", "lone-cr.env", "A=1\rB=2\r")

# --- skill (SPEC-0023 markdown) ----------------------------------------------------------

put("skill", "empty.md", "")
put("skill", "headings-only.md", "# A\n## Tool Discovery\n## Tier Requirement\n### Scope Rules\n")
put("skill", "deep-lists.md", "# S\n## Tool Discovery\n" + "".join("  " * i + "- `x" + str(i) + "`\n" for i in range(300)))
put("skill", "deep-quotes.md", "# S\n## Scope Rules\n" + ">" * 5000 + " x\n")
put("skill", "nul-and-unclosed.md", "# S\x00\n## Tool Discovery\n- `mcp__a__b\n- `` ` ``\n- `*`\n- `.`\n")
put("skill", "huge-tier.md", "# S\n## Tier Requirement\nTier " + "9" * 100000 + "\n")
put("skill", "setext-and-frontmatter.md", "---\nname: x\n---\nSkill: T\n===\n## 1) tool discovery (ordered):\n1. `gh pr create`\n2. see HTTP `https://x`\n")

# --- layer and archive -------------------------------------------------------------------

DESCRIBE = json.dumps({"version": 2, "description": "Image.", "tools": [
    {"name": "now", "description": "Now", "inputSchema": {"type": "object"}, "http": {"method": "GET", "path": "/now"}}]})
TOOLS = json.dumps({"tools": [{"name": "search", "description": "Search", "inputSchema": {"properties": {}}}]})


def tar_bytes(entries, fmt=tarfile.GNU_FORMAT):
    """entries: (name, kind, data_or_target). kind: f file, d dir, l symlink, h hardlink, c chardev."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, kind, data in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            info.mode = 0o644
            if kind == "f":
                data = data.encode() if isinstance(data, str) else data
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
                continue
            info.type = {"d": tarfile.DIRTYPE, "l": tarfile.SYMTYPE, "h": tarfile.LNKTYPE, "c": tarfile.CHRTYPE}[kind]
            if kind in "lh":
                info.linkname = data
            t.addfile(info)
    return buf.getvalue()


def gz(data):
    return gzip.compress(data, mtime=0)


layer_plain = tar_bytes([(".claw-describe.json", "f", DESCRIBE), (".claw-tools.json", "f", TOOLS)])
put("layer", "plain.tar", layer_plain)
put("layer", "gzip.tar.gz", gz(layer_plain))
put("layer", "gzip-concatenated.tar.gz", gz(layer_plain[:700]) + gz(layer_plain[700:]))
put("layer", "gzip-truncated.tar.gz", gz(layer_plain)[:60])
put("layer", "gzip-header-only", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")
put("layer", "zstd-header-only", b"\x28\xb5\x2f\xfd")
put("layer", "zstd-frame-bad", b"\x28\xb5\x2f\xfd\x04\x58\x00\x00\xff\xff\xff\xff")
put("layer", "truncated.tar", layer_plain[:700])
put("layer", "truncated-header.tar", layer_plain[:300])
put("layer", "empty", b"")
put("layer", "zeros.tar", b"\0" * 1024)
put("layer", "links.tar", tar_bytes([
    ("usr/lib/d.json", "f", DESCRIBE), (".claw-describe.json", "l", "usr/lib/d.json"),
    (".claw-tools.json", "l", "../../../etc/passwd"), ("loop", "l", "loop"), ("a", "l", "b"), ("b", "l", "a"),
    ("etc", "l", "/usr/lib"), ("hard", "h", "usr/lib/d.json"), ("dev", "c", "")]))
put("layer", "whiteouts.tar", tar_bytes([
    (".claw-describe.json", "f", DESCRIBE), (".wh..claw-describe.json", "f", ""), (".wh..wh..opq", "f", ""),
    ("a/.wh..wh..opq", "f", ""), (".wh.", "f", ""), (".wh...", "f", ""), ("/.claw-tools.json/", "d", "")]))
put("layer", "paths.tar", tar_bytes([
    ("/../../.claw-describe.json", "f", DESCRIBE), ("././/.claw-tools.json", "f", TOOLS), ("a" * 300, "f", "long"),
    ("x/" * 60 + "y", "f", "deep")]))
put("layer", "pax.tar", tar_bytes([(".claw-describe.json", "f", DESCRIBE), ("\u00e4" * 120, "f", "pax")], tarfile.PAX_FORMAT))
put("layer", "not-utf8-file.tar", tar_bytes([(".claw-describe.json", "f", b"\xff\xfe{}")]))
put("layer", "big-size-field.tar", tar_bytes([(".claw-describe.json", "f", "{}")])[:124] + b"77777777777\0" + tar_bytes([(".claw-describe.json", "f", "{}")])[136:])


def sha(data):
    import hashlib
    return hashlib.sha256(data).hexdigest()


def docker_save(images, extra=(), manifest=None):
    """images: list of (tags, config dict, [layer bytes]). Legacy `docker save` layout."""
    entries = []
    out = []
    for tags, config, lyrs in images:
        cfg = json.dumps(config).encode()
        cid = sha(cfg)
        entries.append((f"{cid}.json", "f", cfg))
        names = []
        for layer in lyrs:
            lid = sha(layer)
            entries.append((f"{lid}/", "d", ""))
            entries.append((f"{lid}/layer.tar", "f", layer))
            names.append(f"{lid}/layer.tar")
        out.append({"Config": f"{cid}.json", "RepoTags": tags, "Layers": names})
    entries.append(("manifest.json", "f", json.dumps(out if manifest is None else manifest)))
    entries.extend(extra)
    return tar_bytes(entries)


LABELS = {"config": {"Labels": {"claw.type": "openclaw", "claw.describe": "/.claw-describe.json"}}}
archive_ok = docker_save([(["svc:1"], LABELS, [layer_plain])])
put("archive", "legacy.tar", archive_ok)
put("archive", "two-images-shared-layer.tar", docker_save([
    (["a:1", "docker.io/library/a:latest"], LABELS, [layer_plain]),
    (["b"], {"config": {"Labels": None}}, [tar_bytes([(".claw-tools.json", "f", TOOLS)]), layer_plain])]))
put("archive", "gzip-layer.tar", docker_save([(["gz:1"], LABELS, [gz(layer_plain)])]))
put("archive", "links-layer.tar", docker_save([(["l:1"], {}, [
    tar_bytes([(".claw-describe.json", "l", "/x/../../d.json"), ("d.json", "f", DESCRIBE), (".claw-tools.json", "l", ".claw-tools.json")])])]))
put("archive", "truncated.tar", archive_ok[: len(archive_ok) // 2])
put("archive", "truncated-header.tar", archive_ok[:200])
put("archive", "no-manifest.tar", tar_bytes([("x", "f", "y")]))
put("archive", "manifest-not-json.tar", tar_bytes([("manifest.json", "f", "[{")]))
put("archive", "manifest-wrong-shape.tar", tar_bytes([("manifest.json", "f", '{"Config": 1}')]))
put("archive", "manifest-missing-config.tar", tar_bytes([("manifest.json", "f", '[{"Config": "nope.json", "RepoTags": ["x"], "Layers": ["nope.tar"]}]')]))
put("archive", "manifest-missing-layer.tar", tar_bytes([
    ("c.json", "f", "{}"), ("manifest.json", "f", '[{"Config": "c.json", "RepoTags": ["x", "", ":", "@sha256:"], "Layers": ["nope.tar", "../c.json"]}]')]))
put("archive", "symlinked-entries.tar", tar_bytes([
    ("real.json", "f", json.dumps(LABELS)), ("c.json", "l", "real.json"), ("layer.tar", "f", layer_plain),
    ("l1.tar", "l", "l2.tar"), ("l2.tar", "l", "l1.tar"), ("up.tar", "l", "../../layer.tar"), ("ok.tar", "l", "./x/../layer.tar"),
    ("manifest.json", "f", '[{"Config": "c.json", "RepoTags": ["s:1"], "Layers": ["ok.tar", "layer.tar"]}, {"Config": "c.json", "RepoTags": ["t"], "Layers": ["l1.tar"]}, {"Config": "c.json", "RepoTags": ["u"], "Layers": ["up.tar"]}]')]))
put("archive", "oci-in-tar.tar", tar_bytes([
    ("oci-layout", "f", '{"imageLayoutVersion": "1.0.0"}'), ("index.json", "f", '{"schemaVersion": 2, "manifests": []}'),
    (f"blobs/sha256/{sha(layer_plain)}", "f", layer_plain), (f"blobs/sha256/{sha(json.dumps(LABELS).encode())}", "f", json.dumps(LABELS)),
    ("manifest.json", "f", json.dumps([{"Config": f"blobs/sha256/{sha(json.dumps(LABELS).encode())}", "RepoTags": ["oci:1"],
                                        "Layers": [f"blobs/sha256/{sha(layer_plain)}"]}]))]))
put("archive", "empty", b"")
put("archive", "zeros.tar", b"\0" * 1536)
put("archive", "gzip-whole.tar.gz", gz(archive_ok))


# --- known failures (`crash-*`, see KNOWN_FAILING in tests/it/fuzz_corpus.rs) ----------------
# Only with `--crash`: the layer ones stream GiBs through the `zstd` command.

def crash(target, name, data):
    with open(os.path.join(ROOT, target, "crash-" + name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def zstd_layer(parts, level):
    """parts: bytes, or ("zeros", n) for n zero bytes streamed (never held in memory)."""
    import subprocess
    p = subprocess.Popen(["zstd", "-q", f"-{level}", "-c"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    import threading
    out = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()))
    reader.start()
    for part in parts:
        if isinstance(part, tuple):
            chunk = part[1] * (1 << 20)
            for _ in range(part[2] >> 20):
                p.stdin.write(chunk)
        else:
            p.stdin.write(part)
    p.stdin.close()
    reader.join()
    p.wait()
    return out[0]


def header(name, typ=tarfile.REGTYPE, size=0, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mtime, info.linkname = typ, size, 0, link
    return info.tobuf(format=tarfile.GNU_FORMAT)


if __name__ == "__main__" and "--crash" in __import__("sys").argv:
    crash("pod", "count-unbounded.yml", "services:\n  a:\n    image: a\n    x-claw:\n      count: 4294967295\n")
    crash("pod", "many-unknown-keys.yml",
          "services:\n  a:\n    image: a\n    x-claw:\n" + "".join(f"      k{i}: 1\n" for i in range(4000)))
    crash("descriptor", "many-bad-tools.json",
          json.dumps({"version": 2, "description": "d", "mcp": {"path": "/m"}, "tools": [{"description": "d"}] * 3000}))
    crash("descriptor", "regex-compile-per-tool.json", json.dumps({"version": 2, "description": "d", "mcp": {"path": "/m"}, "tools": [
        {"name": f"t{i}", "description": "d", "inputSchema": {"type": "object", "patternProperties": {"\\p{L}{1000000}": {}}}}
        for i in range(20)]}))
    crash("dotenv", "many-bad-lines.env", "x\n" * 30000)
    chain = header(".claw-describe.json", tarfile.SYMTYPE, link="l1") + b"".join(
        header(f"l{i}", tarfile.SYMTYPE, link=f"l{i + 1}") for i in range(1, 12))
    after = header("x") + b"\0" * 1024
    crash("layer", "gnu-longname-1gib.tar.zst",
          zstd_layer([chain, header("././@LongLink", tarfile.GNUTYPE_LONGNAME, 1 << 30), ("zeros", b"\0", 1 << 30), after], 19))
    crash("layer", "zstd-skip-2gib.tar.zst", zstd_layer([chain, header("junk", size=2 << 30), ("zeros", b"\0", 2 << 30), after], 3))
    # The PAX one: no symlink chain, 1 GiB of `a` as a PAX extended header.
    crash("layer", "pax-header-1gib.tar.zst",
          zstd_layer([header("././@LongLink", tarfile.XHDTYPE, 1 << 30), ("zeros", b"a", 1 << 30),
                      header(".claw-describe.json") + b"\0" * 1024], 19))
