//! A small DSL for integration tests: build a pod directory, run `clawc`, look at what
//! it printed and wrote.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn clawc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_clawc"));
    // Hermetic: the process environment overlays .env, so start from nothing, and read
    // no image unless a test asks (`--images …` on the command line wins over this).
    c.env_clear();
    c.env("CLAWC_IMAGES", "none");
    // Caches (images, --check's stat records) under target/, never the user's; a test
    // that means to use one sets its own.
    c.env("CLAWC_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("it-cache"));
    c
}

/// A pod directory in a temporary location.
pub(crate) struct Pod {
    pub dir: tempfile::TempDir,
}

pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The diagnostics printed with `--format json`.
    pub(crate) fn diagnostics(&self) -> Vec<serde_json::Value> {
        self.stdout.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).filter(|v| v.get("code").is_some()).collect()
    }

    pub(crate) fn codes(&self) -> Vec<String> {
        self.diagnostics().iter().map(|d| d["code"].as_str().unwrap().to_string()).collect()
    }

    #[track_caller]
    pub(crate) fn assert_error(&self, code: &str, message_part: &str) -> serde_json::Value {
        let d = self.diagnostics().into_iter().find(|d| d["code"] == code && d["message"].as_str().unwrap().contains(message_part));
        d.unwrap_or_else(|| panic!("no {code} diagnostic containing {message_part:?}; got:\n{}\n{}", self.stdout, self.stderr))
    }
}

impl Pod {
    pub(crate) fn new(pod_yaml: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("claw-pod.yml"), pod_yaml).unwrap();
        Pod { dir }
    }

    pub(crate) fn file(self, rel: &str, text: &str) -> Self {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `clawc compile claw-pod.yml -o out --format json <extra>` in the pod directory.
    pub(crate) fn compile(&self, extra: &[&str]) -> Run {
        self.run_with_env(extra, &[])
    }

    pub(crate) fn run_with_env(&self, extra: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = clawc();
        c.current_dir(self.dir.path()).args(["compile", "claw-pod.yml", "-o", "out", "--format", "json"]).args(extra);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into(),
            stderr: String::from_utf8_lossy(&o.stderr).into(),
        }
    }

    pub(crate) fn out_exists(&self) -> bool {
        self.path("out").exists()
    }

    /// Replaces `from` with `to` in `claw-pod.yml`.
    pub(crate) fn edit_pod(&self, from: &str, to: &str) {
        std::fs::write(self.path("claw-pod.yml"), self.read("claw-pod.yml").replace(from, to)).unwrap();
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }
}

/// Every file under `root`, by `/`-separated relative path.
pub(crate) fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A one-tool v2 HTTP descriptor for `tool` (used by many tests).
pub(crate) fn http_descriptor(tools: &[&str]) -> String {
    let tools: Vec<String> = tools
        .iter()
        .map(|t| {
            format!(
                r#"{{"name":"{t}","description":"does {t}","inputSchema":{{"type":"object"}},"http":{{"method":"POST","path":"/{t}"}}}}"#
            )
        })
        .collect();
    format!(r#"{{"version":2,"description":"svc","tools":[{}]}}"#, tools.join(","))
}

/// Every `.rs` file under `dir`, recursively.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

// ---- An OCI image layout, written byte for byte (no Docker) ----

/// Writes `bytes` as a blob of the layout in `dir`; returns its OCI descriptor.
fn blob(dir: &Path, media_type: &str, bytes: &[u8]) -> serde_json::Value {
    use sha2::{Digest, Sha256};
    let hex = hex::encode(Sha256::digest(bytes));
    std::fs::write(dir.join("blobs/sha256").join(&hex), bytes).unwrap();
    serde_json::json!({"mediaType": media_type, "digest": format!("sha256:{hex}"), "size": bytes.len()})
}

/// An uncompressed tar layer holding `files` (path, contents), with fixed metadata; a
/// file that starts with `#!` is executable.
fn layer(files: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, text) in files {
        let mut h = tar::Header::new_ustar();
        h.set_size(text.len() as u64);
        h.set_mode(if text.starts_with("#!") { 0o755 } else { 0o644 });
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        b.append_data(&mut h, path, text.as_bytes()).unwrap();
    }
    b.into_inner().unwrap()
}

/// One image of [`oci_layout`]: its reference, its labels (a JSON object) and the files
/// (path, contents) of its one layer.
pub(crate) type Image<'a> = (&'a str, serde_json::Value, &'a [(&'a str, &'a str)]);

/// An OCI image layout at `dir` holding `images`.
pub(crate) fn oci_layout(dir: &Path, images: &[Image]) {
    use serde_json::json;
    std::fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    let mut manifests = Vec::new();
    for (reference, labels, files) in images {
        let layer = blob(dir, "application/vnd.oci.image.layer.v1.tar", &layer(files));
        let config = json!({
            "architecture": "amd64",
            "os": "linux",
            "config": {"Labels": labels},
            "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]},
        });
        let config = blob(dir, "application/vnd.oci.image.config.v1+json", &serde_json::to_vec(&config).unwrap());
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": config,
            "layers": [layer],
        });
        let mut manifest = blob(dir, "application/vnd.oci.image.manifest.v1+json", &serde_json::to_vec(&manifest).unwrap());
        manifest["annotations"] = json!({"org.opencontainers.image.ref.name": reference});
        manifests.push(manifest);
    }
    let index = json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests});
    std::fs::write(dir.join("index.json"), serde_json::to_vec_pretty(&index).unwrap()).unwrap();
}

/// Asserts that the document `rel` (from the repository root) is `want`, the text the code
/// renders it from; `UPDATE_GOLDEN=1` rewrites it (`regenerate` says how, on failure).
pub(crate) fn assert_generated_doc(rel: &str, want: &str, regenerate: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, want).unwrap();
        return;
    }
    let got = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(got == want, "{rel} is stale: run `{regenerate}` and review the diff");
}

/// Rewrites `path` with the same length and its old modification time: only `ctime` (and,
/// when `replace`, the inode) tells it changed.
pub(crate) fn forge(path: &std::path::Path, replace: bool) {
    let meta = std::fs::metadata(path).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.iter().position(u8::is_ascii_lowercase).unwrap();
    bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
    let target = if replace { path.with_extension("new") } else { path.to_path_buf() };
    std::fs::write(&target, &bytes).unwrap();
    let f = std::fs::File::options().write(true).open(&target).unwrap();
    f.set_modified(meta.modified().unwrap()).unwrap();
    drop(f);
    if replace {
        std::fs::rename(&target, path).unwrap();
    }
    let now = std::fs::metadata(path).unwrap();
    assert_eq!((now.len(), now.modified().unwrap()), (meta.len(), meta.modified().unwrap()), "size and mtime kept");
}

/// `f(case directory, name)` for every golden case (`tests/cases/*`), in name order, on
/// every core (each case is hundreds of compiles); the results in the cases' order.
pub(crate) fn on_every_golden_case<R: Send>(f: impl Fn(&Path, &str) -> R + Sync) -> Vec<R> {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut names: Vec<_> = std::fs::read_dir(&cases).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    let (names, cases, f) = (&names, &cases, &f);
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    names.iter().enumerate().skip(t).step_by(threads).map(|(i, n)| (i, f(&cases.join(n), n))).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<(usize, R)> = runs.into_iter().flat_map(|r| r.join().unwrap()).collect();
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, r)| r).collect()
    })
}
