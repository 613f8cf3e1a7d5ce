//! Entry points for the fuzz targets in `fuzz/` and for the corpus replay test
//! (`tests/it/fuzz_corpus.rs`). Each takes arbitrary bytes and drives the real library
//! code the way a compile would, diagnostics rendered included; none may panic, hang or
//! allocate without bound, whatever the bytes. Not a stable API (see `docs/fuzzing.md`).
//!
//! Texts are taken lossily: the real readers refuse invalid UTF-8 up front, and a
//! replacement character is as good a hostile input as the byte it stands for.

use crate::compile;
use crate::describe;
use crate::describe::{Described, ServiceDescriptor};
use crate::diag::Diagnostic;
use crate::grant::SecretMode;
use crate::image::TOOLS_IMPLICIT;
/// What the image tests see an image's executables with (the real fetch path).
pub use crate::image::fetch::fetched_executables;
use crate::image::layers;
/// What the corpus test reads layers and archives with.
pub use crate::image::{FileRead, layers::find_files, layout::Layout};
use crate::pod::env::{Env, parse_dotenv};
use crate::pod::parse_pod;
use crate::source::OriginKind;
use crate::source::fs::MAX_INPUT_BYTES;
use crate::sourcemap::{FileId, SourceMap};
use crate::yaml;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};

/// A fuzz target's entry point.
pub type Target = fn(&[u8]);

/// Every target: its name (the directory under `fuzz/corpus/` and the file under
/// `fuzz/fuzz_targets/`) and its entry point.
pub const TARGETS: &[(&str, Target)] = &[
    ("pod", pod),
    ("descriptor", descriptor),
    ("snapshot", snapshot),
    ("dotenv", dotenv),
    ("archive", archive),
    ("layer", layer),
    ("skill", skill),
];

/// The image paths the image targets read (what a compile reads by default).
const IMAGE_PATHS: [&str; 2] = ["/.claw-describe.json", TOOLS_IMPLICIT];

/// The variables every target's pod sees.
fn env() -> Env {
    let vars = [("REPO_ROOT", "."), ("TOKEN", "t0k3n"), ("PORT", "8080"), ("EMPTY", "")];
    Env::from_pairs(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
}

/// A pod that grants its agent everything a descriptor of service `svc` may offer, so a
/// fuzzed descriptor flows through register, grant and project.
const DESCRIBED_POD: &str = "\
x-claw:
  pod: fuzz
services:
  agent:
    image: agent
    environment: [TOKEN]
    x-claw:
      cllama: passthrough
      count: 2
      tools: [svc]
      feeds: [prices, f, a, \"scoped-{claw_id}\"]
      memory:
        service: svc
  svc:
    image: svc
    expose: [\"8080\"]
    x-claw:
      describe-file: svc.json
";

/// The text the real readers would accept from `data`, or `None` when they refuse it
/// for its size.
fn text(data: &[u8]) -> Option<String> {
    (data.len() as u64 <= MAX_INPUT_BYTES).then(|| String::from_utf8_lossy(data).into_owned())
}

/// Renders diagnostics as both output formats do (JSON lines and miette reports).
fn render(diags: &[Diagnostic], sources: &SourceMap) {
    for d in diags {
        let json = serde_json::to_string(&d.to_json(sources)).expect("diagnostics serialize");
        std::hint::black_box(json);
        std::hint::black_box(format!("{:?}", d.to_report(sources)));
    }
}

/// Parses, expands and (when it is valid) builds `pod_text` with `descriptors`
/// (service → descriptor text), as `compile` does past reading files.
fn compile_texts(pod_text: String, descriptors: &[(&str, String)]) {
    let env = env();
    let mut sources = SourceMap::default();
    let mut diags = crate::diag::Diagnostics::default();
    let pod_file = sources.add("claw-pod.yml", pod_text);
    let root = match yaml::parse(pod_file, sources.get(pod_file)) {
        Ok(root) => root,
        Err(ds) => return render(&ds, &sources),
    };
    let (pod, ds) = parse_pod(pod_file, &root, &env);
    diags.extend(ds);
    if let Some(pod) = pod {
        std::hint::black_box(crate::image::usage::references(&pod, &BTreeSet::new()));
        let mut described = BTreeMap::new();
        for (service, text) in descriptors {
            let file = sources.add(format!("{service}.json"), text.clone());
            let (d, ds) = describe::decode(file, sources.get(file));
            diags.extend(ds);
            if let Some(descriptor) = d {
                let descriptor = ServiceDescriptor {
                    descriptor: descriptor.into(),
                    file,
                    origin: OriginKind::DescribeFile,
                    image: None,
                    snapshot: None,
                    skill: None,
                };
                described.insert(service.to_string(), Described { name: service.to_string(), runner: None, descriptor: Some(descriptor) });
            }
        }
        for mode in [SecretMode::Redact, SecretMode::Inline] {
            let mut ds = diags.clone();
            let mut tree = crate::artifact::ArtifactSet::default();
            let mut stream = compile::Stream::new(&mut tree);
            if let Some(built) = compile::build(
                pod.clone(),
                described.clone(),
                &Default::default(),
                &env,
                mode,
                1,
                None,
                &Default::default(),
                &sources,
                &mut ds,
                &mut stream,
            ) {
                std::hint::black_box((built.outputs, tree));
            }
            render(&ds.sorted(&sources).0, &sources);
        }
    } else {
        render(&diags.0, &sources);
    }
}

/// (a) A `claw-pod.yml`: YAML with spans → typed, expanded pod → artifacts.
pub fn pod(data: &[u8]) {
    let Some(text) = text(data) else { return };
    compile_texts(text, &[]);
}

/// Decodes one descriptor on its own (`describe::decode`).
fn decode_alone(name: &str, text: String) -> Option<describe::Descriptor> {
    let mut sources = SourceMap::default();
    let file = sources.add(name, text);
    let (d, ds) = describe::decode(file, sources.get(file));
    render(&ds, &sources);
    d
}

/// (b) A descriptor (`.claw-describe.json`): decoded and checked, then compiled for an
/// agent granted all of it.
pub fn descriptor(data: &[u8]) {
    let Some(text) = text(data) else { return };
    if decode_alone("svc.json", text.clone()).is_some() {
        compile_texts(DESCRIBED_POD.to_string(), &[("svc", text)]);
    }
}

/// (c) An MCP `tools/list` snapshot (`.claw-tools.json`): converted to a descriptor as
/// an image's snapshot is, decoded, and merged into a descriptor without tools.
pub fn snapshot(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else { return };
    for (service, path) in [("svc", "/mcp"), ("", "/")] {
        let Ok((converted, _partial)) = describe::snapshot::to_descriptor(service, &value, path) else { return };
        let converted = serde_json::to_string_pretty(&converted).expect("JSON values serialize") + "\n";
        let mut sources = SourceMap::default();
        let base = sources.add("svc.json", r#"{"version": 2, "description": "Base.", "mcp": {"path": "/mcp"}}"#);
        let snap = sources.add(".claw-tools.json (as descriptor)", converted);
        let (desc, ds) = describe::decode(base, sources.get(base));
        render(&ds, &sources);
        let (tools, ds) = describe::decode(snap, sources.get(snap));
        render(&ds, &sources);
        if let (Some(desc), Some(tools)) = (desc, tools) {
            match describe::merge::with_snapshot(desc, tools, base, snap, &sources) {
                Ok(merged) => std::hint::black_box(merged).tools.len(),
                Err(d) => {
                    render(&[d], &sources);
                    0
                }
            };
        }
    }
}

/// (d) A `.env` file, then lookups and the lock's digest over them.
pub fn dotenv(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let mut sources = SourceMap::default();
    let file: FileId = sources.add(".env", text);
    let (env, ds) = parse_dotenv(file, sources.get(file));
    render(&ds, &sources);
    let env = env.overlay(Env::from_pairs([("PROCESS".to_string(), "1".to_string())]));
    for name in ["A", "TOKEN", "PATH", "export", ""] {
        std::hint::black_box(env.get(name));
    }
    std::hint::black_box(env.digest(&env.used()));
}

/// (g) A markdown skill (SPEC-0023): its sections, tier, Tool Discovery and scope rules
/// read, then resolved against a small inventory and its log line written.
pub fn skill(data: &[u8]) {
    use crate::skill::{markdown, resolve};
    let Some(text) = text(data) else { return };
    let md = markdown::parse(&text);
    let granted = vec![resolve::Granted {
        service: "gitea".into(),
        tool: "create_pull_request".into(),
        shown: "mcp__gitea__create_pull_request".into(),
    }];
    let inventory = resolve::Inventory { granted, cli: ["gh", "curl", "docker"].iter().map(|s| (*s).to_string()).collect() };
    let capability = md.capability("fuzz");
    if let Some(r) = resolve::resolve(&md.discovery, &capability, &inventory) {
        std::hint::black_box(r.line("fuzz"));
    }
    std::hint::black_box((md.missing(), md.is_spec(), md.tier, md.scope_rules));
}

/// (e) A `docker save` archive: written to a temporary file as is (after
/// [`fix_tar_checksums`]), opened with [`Layout::open_archive`], and every image's
/// descriptor, snapshot and executables read out of its layers.
pub fn archive(data: &[u8]) {
    let data = fix_tar_checksums(data);
    let Ok(mut file) = tempfile::NamedTempFile::new() else { return };
    if file.write_all(&data).and_then(|()| file.flush()).is_err() {
        return;
    }
    let Ok(layout) = Layout::open_archive(file.path()) else { return };
    let paths: Vec<String> = IMAGE_PATHS.iter().map(std::string::ToString::to_string).collect();
    for reference in layout.references().iter().take(4) {
        std::hint::black_box(layout.inspect(reference));
        if let Ok(got) = layout.read_with_executables(reference, &paths) {
            read_out(&got.files);
            std::hint::black_box(got.executables);
        }
    }
}

/// (e) One image layer (plain tar, gzip or zstd) walked for the image paths.
pub fn layer(data: &[u8]) {
    let data = fix_tar_checksums(data);
    let paths: Vec<String> = IMAGE_PATHS.iter().chain(&["/etc/../a/./b", "/"]).map(std::string::ToString::to_string).collect();
    let open = |_| Ok(Box::new(&data[..]) as Box<dyn Read>);
    if let Ok(files) = layers::find_files(1, open, &paths) {
        read_out(&files);
    }
    // The same bytes as a two-layer stack (whiteouts and opaque dirs then matter), telling
    // the executables as well, in the PATH directories of a merged-/usr image and in `/`.
    let open = |_| Ok(Box::new(&data[..]) as Box<dyn Read>);
    let dirs = crate::image::executables::path_dirs(Some("/bin:/usr/bin:/usr/local/bin:/"));
    std::hint::black_box(layers::read_layers(&layers::Limits::DEFAULT, 2, open, &paths, Some(&dirs)).is_ok());
}

/// Decodes the texts read out of an image as a compile would.
fn read_out(files: &BTreeMap<String, FileRead>) {
    for (path, read) in files {
        if let FileRead::Text(t) = read {
            if path == TOOLS_IMPLICIT {
                snapshot(t.as_bytes());
            } else {
                std::hint::black_box(decode_alone("image.json", t.clone()));
            }
        }
    }
}

/// `data` with the checksum of every ustar/GNU tar header it can find recomputed
/// (recursively into plain tar entries), so mutated archives get past the checksum check
/// into the code behind it. The walk stops at the first block that is not such a header
/// (or whose size is not octal), so gzip, zstd and other bytes are returned unchanged.
pub fn fix_tar_checksums(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    fix_in_place(&mut out, 0);
    out
}

fn fix_in_place(buf: &mut [u8], depth: usize) {
    let mut at = 0;
    while at + 512 <= buf.len() {
        let header = &mut buf[at..at + 512];
        if header.iter().all(|&b| b == 0) {
            at += 512;
            continue;
        }
        if &header[257..262] != b"ustar" {
            return;
        }
        header[148..156].fill(b' ');
        let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
        header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        let Some(size) = octal(&header[124..136]) else { return };
        let start = at + 512;
        let Some(end) = usize::try_from(size).ok().and_then(|s| start.checked_add(s)) else { return };
        if depth < 2 && end <= buf.len() && size >= 512 && buf.get(start + 257..start + 262) == Some(b"ustar") {
            fix_in_place(&mut buf[start..end], depth + 1);
        }
        let Some(next) = usize::try_from(size.div_ceil(512) * 512).ok().and_then(|s| start.checked_add(s)) else { return };
        at = next;
    }
}

/// A tar octal number field (NUL/space padded); `None` when it is not one.
fn octal(field: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(field).ok()?.trim_matches(|c| c == '\0' || c == ' ');
    if s.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(s, 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_are_fixed_so_a_mutated_header_still_parses() {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        h.set_mode(0o644);
        b.append_data(&mut h, ".claw-describe.json", &b"{}"[..]).unwrap();
        let mut bytes = b.into_inner().unwrap();
        bytes[0] = b'x';
        let fixed = fix_tar_checksums(&bytes);
        let mut a = tar::Archive::new(&fixed[..]);
        let names: Vec<String> = a.entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect();
        assert_eq!(names, ["xclaw-describe.json"]);
        assert_eq!(fix_tar_checksums(b"not a tar"), b"not a tar");
    }
}
