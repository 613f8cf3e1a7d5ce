//! Daemonless image stores: an OCI image layout directory (`oci:DIR`) and a
//! `docker save` archive (`archive:TAR`, both the legacy `<id>/layer.tar` form and the
//! OCI-in-tar form of Docker ≥ 25). Both end up as a [`Layout`]: images by reference,
//! each with its labels and its layer blobs, read without extracting anything to disk.

use super::layers::{self, Extracted, LayerError, Limits};
use super::{FileRead, ImageInfo, ImageSource, diags, executables, normalize_ref};
use crate::digest::sha256_hex;
use oci_spec::image::{ImageIndex, ImageManifest, MediaType};
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Largest manifest, index or config blob read (they are small JSON documents).
const MAX_META_BYTES: u64 = 4 * 1024 * 1024;
/// Deepest chain of image indexes followed to a manifest. Real layouts nest one or two
/// (a multi-platform index under `index.json`); a chain of thousands is hostile.
pub(crate) const MAX_INDEX_DEPTH: usize = 8;
/// Most entries read from a `docker save` archive (a few per layer in practice).
const MAX_ARCHIVE_ENTRIES: usize = 100_000;

/// Why a layout or archive could not be read: it is not what it claims to be
/// ([`diags::CORRUPT`]), or it is more than clawc reads ([`diags::LAYER_TOO_LARGE`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError {
    pub code: crate::diag::Code,
    pub message: String,
}

impl LayoutError {
    fn corrupt(message: impl Into<String>) -> Self {
        LayoutError { code: diags::CORRUPT, message: message.into() }
    }
}

impl From<LayerError> for LayoutError {
    fn from(e: LayerError) -> Self {
        match e {
            LayerError::Unreadable(m) => LayoutError::corrupt(format!("a layer is not a readable tar stream: {m}")),
            LayerError::TooLarge(m) => LayoutError { code: diags::LAYER_TOO_LARGE, message: m },
        }
    }
}

/// Where blobs live.
enum Blobs {
    Dir(PathBuf),
    /// Entry path → (offset, size) inside the archive file.
    Tar {
        file: PathBuf,
        index: BTreeMap<String, (u64, u64)>,
    },
}

#[derive(Clone)]
struct Entry {
    info: ImageInfo,
    /// Layer blob locations (directory-relative or archive entry paths), bottom first.
    layers: Vec<(String, Option<u64>)>,
}

/// An opened OCI layout or archive.
pub struct Layout {
    blobs: Blobs,
    images: BTreeMap<String, Entry>,
}

impl Layout {
    /// The references this store holds (normalised), for "did you mean" help.
    pub fn references(&self) -> Vec<String> {
        self.images.keys().cloned().collect()
    }

    pub(crate) fn inspect(&self, reference: &str) -> Option<ImageInfo> {
        self.images.get(&normalize_ref(reference)).map(|e| e.info.clone())
    }

    /// Reads `paths` from the image `reference` (which [`Layout::inspect`] found).
    pub fn read(&self, reference: &str, paths: &[String]) -> Result<BTreeMap<String, FileRead>, LayoutError> {
        let Some(entry) = self.images.get(&normalize_ref(reference)) else { return Ok(BTreeMap::new()) };
        let open = |i: usize| -> Result<Box<dyn Read>, LayerError> {
            let (loc, size) = &entry.layers[i];
            self.open(loc, *size).map_err(|e| LayerError::Unreadable(e.message))
        };
        Ok(layers::find_files(entry.layers.len(), open, paths)?)
    }

    /// Reads `paths` from the image `reference` as [`Layout::read`] does, and in the same
    /// pass over its layers the names of the executables in its `PATH` directories.
    pub(crate) fn read_with_executables(&self, reference: &str, paths: &[String]) -> Result<Extracted, LayoutError> {
        let Some(entry) = self.images.get(&normalize_ref(reference)) else { return Ok(Extracted::default()) };
        let open = |i: usize| -> Result<Box<dyn Read>, LayerError> {
            let (loc, size) = &entry.layers[i];
            self.open(loc, *size).map_err(|e| LayerError::Unreadable(e.message))
        };
        let dirs = executables::path_dirs(entry.info.path.as_deref());
        Ok(layers::read_layers(&Limits::DEFAULT, entry.layers.len(), open, paths, Some(&dirs))?)
    }

    fn open(&self, loc: &str, expected: Option<u64>) -> Result<Box<dyn Read>, LayoutError> {
        match &self.blobs {
            Blobs::Dir(dir) => {
                let path = dir.join(loc);
                // A blob is a regular file of the layout: never a symlink out of it, never
                // a FIFO that would block the read.
                let f = crate::disk::open_regular(&path, false).map_err(|e| LayoutError::corrupt(format!("blob `{loc}`: {e}")))?;
                let len = f.metadata().map_err(|e| LayoutError::corrupt(e.to_string()))?.len();
                if let Some(want) = expected.filter(|w| *w != len) {
                    return Err(LayoutError::corrupt(format!("blob `{loc}` is {len} bytes; its manifest says {want} (truncated?)")));
                }
                Ok(Box::new(f))
            }
            Blobs::Tar { file, index } => {
                let (offset, size) = *index.get(loc).ok_or_else(|| LayoutError::corrupt(format!("the archive has no entry `{loc}`")))?;
                if let Some(want) = expected.filter(|w| *w != size) {
                    return Err(LayoutError::corrupt(format!("entry `{loc}` is {size} bytes; its manifest says {want} (truncated?)")));
                }
                let mut f = crate::disk::open_regular(file, true).map_err(|e| LayoutError::corrupt(e.to_string()))?;
                f.seek(SeekFrom::Start(offset)).map_err(|e| LayoutError::corrupt(e.to_string()))?;
                Ok(Box::new(f.take(size)))
            }
        }
    }

    fn read_small(&self, loc: &str, digest: Option<&str>) -> Result<Vec<u8>, LayoutError> {
        let mut bytes = Vec::new();
        self.open(loc, None)?
            .take(MAX_META_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| LayoutError::corrupt(format!("`{loc}`: {e}")))?;
        if bytes.len() as u64 > MAX_META_BYTES {
            return Err(LayoutError::corrupt(format!("`{loc}` is larger than {MAX_META_BYTES} bytes")));
        }
        if let Some(d) = digest {
            let got = format!("sha256:{}", sha256_hex(&bytes));
            if got != d {
                return Err(LayoutError::corrupt(format!("`{loc}` does not match its digest {d} (got {got})")));
            }
        }
        Ok(bytes)
    }

    /// Opens the layout of `oci:DIR` or `archive:TAR`; `None` for the other sources.
    pub(crate) fn from_source(source: &ImageSource) -> Option<Result<Layout, LayoutError>> {
        match source {
            ImageSource::Oci(dir) => Some(Layout::open_oci(dir)),
            ImageSource::Archive(file) => Some(Layout::open_archive(file)),
            _ => None,
        }
    }

    /// Opens an OCI image layout directory.
    pub(crate) fn open_oci(dir: &Path) -> Result<Layout, LayoutError> {
        if !dir.join("oci-layout").is_file() {
            return Err(LayoutError::corrupt(format!("`{}` is not an OCI image layout (no `oci-layout` file)", dir.display())));
        }
        let mut layout = Layout { blobs: Blobs::Dir(dir.to_path_buf()), images: BTreeMap::new() };
        let index: ImageIndex = parse(&layout.read_small("index.json", None)?, "index.json")?;
        // Many references may name one manifest: read and verify each blob once.
        let mut seen: BTreeMap<String, Entry> = BTreeMap::new();
        for m in index.manifests() {
            let Some(name) = m.annotations().as_ref().and_then(|a| a.get("org.opencontainers.image.ref.name")) else { continue };
            let digest = m.digest().to_string();
            let entry = match seen.get(&digest) {
                Some(e) => e.clone(),
                None => {
                    let entry = layout.oci_entry(&layout.manifest_for(m.media_type(), &digest)?)?;
                    seen.entry(digest).or_insert(entry).clone()
                }
            };
            layout.images.insert(normalize_ref(name), entry);
        }
        Ok(layout)
    }

    /// The image manifest `digest` names, through at most [`MAX_INDEX_DEPTH`] indexes (a
    /// loop, not recursion: the depth is the layout author's choice).
    fn manifest_for(&self, media: &MediaType, digest: &str) -> Result<ImageManifest, LayoutError> {
        let (mut media, mut digest) = (media.clone(), digest.to_string());
        for _ in 0..=MAX_INDEX_DEPTH {
            let loc = blob_path(&digest)?;
            let bytes = self.read_small(&loc, Some(&digest))?;
            if media != MediaType::ImageIndex {
                return parse(&bytes, &loc);
            }
            let pick = platform_manifest(&parse(&bytes, &loc)?)
                .ok_or_else(|| LayoutError::corrupt(format!("image index `{loc}` lists no manifest")))?;
            (media, digest) = (pick.media_type().clone(), pick.digest().to_string());
        }
        Err(LayoutError::corrupt(format!("image indexes nest deeper than {MAX_INDEX_DEPTH} levels (at `{digest}`)")))
    }

    fn oci_entry(&self, manifest: &ImageManifest) -> Result<Entry, LayoutError> {
        let digest = manifest.config().digest().to_string();
        let config = self.read_small(&blob_path(&digest)?, Some(&digest))?;
        let layers =
            manifest.layers().iter().map(|l| Ok((blob_path(l.digest().as_ref())?, Some(l.size())))).collect::<Result<_, LayoutError>>()?;
        Ok(Entry { info: info_of(digest, &config)?, layers })
    }

    /// Opens a `docker save` archive.
    pub fn open_archive(file: &Path) -> Result<Layout, LayoutError> {
        let f =
            crate::disk::open_regular(file, true).map_err(|e| LayoutError::corrupt(format!("cannot open `{}`: {e}", file.display())))?;
        let mut archive = tar::Archive::new(f);
        let mut index = BTreeMap::new();
        // `docker save` stores a layer shared by several images once and links the rest.
        let mut links = BTreeMap::new();
        let not_tar = |e: std::io::Error| LayoutError::corrupt(format!("`{}` is not a readable tar archive: {e}", file.display()));
        for (n, entry) in archive.entries().map_err(not_tar)?.enumerate() {
            if n >= MAX_ARCHIVE_ENTRIES {
                return Err(LayoutError::corrupt(format!("`{}` has more than {MAX_ARCHIVE_ENTRIES} entries", file.display())));
            }
            let entry = entry.map_err(not_tar)?;
            let path = layers::normalize(&String::from_utf8_lossy(&entry.path_bytes())).trim_start_matches('/').to_string();
            if entry.header().entry_type().is_symlink() {
                let target = entry.link_name_bytes().map(|l| String::from_utf8_lossy(&l).into_owned()).unwrap_or_default();
                let resolved = layers::resolve_link(&format!("/{path}"), &target).unwrap_or_default();
                links.insert(path, resolved.trim_start_matches('/').to_string());
                continue;
            }
            index.insert(path, (entry.raw_file_position(), entry.size()));
        }
        let resolved: Vec<(String, (u64, u64))> =
            links.iter().filter_map(|(l, t)| follow(&index, &links, t).map(|at| (l.clone(), at))).collect();
        index.extend(resolved);
        let len = std::fs::metadata(file).map_err(|e| LayoutError::corrupt(e.to_string()))?.len();
        if index.values().any(|(off, size)| off + size > len) {
            return Err(LayoutError::corrupt(format!("`{}` is truncated", file.display())));
        }
        let mut layout = Layout { blobs: Blobs::Tar { file: file.to_path_buf(), index }, images: BTreeMap::new() };
        let manifest: Vec<ArchiveManifest> = parse(&layout.read_small("manifest.json", None)?, "manifest.json")?;
        for m in manifest {
            let config = layout.read_small(&m.config, None)?;
            let id = format!("sha256:{}", sha256_hex(&config));
            let info = info_of(id, &config)?;
            for tag in m.repo_tags.iter().flatten() {
                let layers = m.layers.iter().map(|l| (l.clone(), None)).collect();
                layout.images.insert(normalize_ref(tag), Entry { info: info.clone(), layers });
            }
        }
        Ok(layout)
    }
}

/// The manifest of a multi-platform index: linux/amd64 when present, else the first, so
/// the choice never depends on the machine clawc runs on.
fn platform_manifest(index: &ImageIndex) -> Option<oci_spec::image::Descriptor> {
    let is_amd64 = |d: &&oci_spec::image::Descriptor| {
        d.platform().as_ref().is_some_and(|p| p.os().to_string() == "linux" && p.architecture().to_string() == "amd64")
    };
    index.manifests().iter().find(is_amd64).or(index.manifests().first()).cloned()
}

/// Where an archive entry reached through links really is.
fn follow<'a>(index: &BTreeMap<String, (u64, u64)>, links: &'a BTreeMap<String, String>, mut t: &'a String) -> Option<(u64, u64)> {
    for _ in 0..8 {
        if let Some(at) = index.get(t) {
            return Some(*at);
        }
        t = links.get(t)?;
    }
    None
}

#[derive(serde::Deserialize)]
struct ArchiveManifest {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "Layers")]
    layers: Vec<String>,
}

fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, LayoutError> {
    serde_json::from_slice(bytes).map_err(|e| LayoutError::corrupt(format!("`{what}` is not valid: {e}")))
}

/// `sha256:<hex>` → `blobs/sha256/<hex>`, refusing anything that is not a plain digest.
fn blob_path(digest: &str) -> Result<String, LayoutError> {
    match digest.split_once(':') {
        Some((alg, hex)) if !alg.is_empty() && !hex.is_empty() && (alg.chars().chain(hex.chars())).all(|c| c.is_ascii_alphanumeric()) => {
            Ok(format!("blobs/{alg}/{hex}"))
        }
        _ => Err(LayoutError::corrupt(format!("`{digest}` is not a digest"))),
    }
}

/// The image `id` with the `config.Labels` and the `PATH` of `config.Env` of its
/// configuration (OCI and Docker share the fields).
fn info_of(id: String, config: &[u8]) -> Result<ImageInfo, LayoutError> {
    let v: serde_json::Value = parse(config, "image configuration")?;
    let config = v.get("config");
    let labels = config.and_then(|c| c.get("Labels")).and_then(|l| l.as_object());
    let labels = labels.into_iter().flatten().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string()))).collect();
    let env = config.and_then(|c| c.get("Env")).and_then(|e| e.as_array());
    let path = executables::env_path(env.into_iter().flatten().filter_map(|e| e.as_str()));
    Ok(ImageInfo { id, labels, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `bytes` as a blob of the layout in `dir`; returns its digest.
    fn blob(dir: &Path, bytes: &[u8]) -> String {
        let hex = sha256_hex(bytes);
        std::fs::write(dir.join("blobs/sha256").join(&hex), bytes).unwrap();
        format!("sha256:{hex}")
    }

    fn descriptor(media: &str, digest: &str, size: usize) -> String {
        format!(r#"{{"mediaType":"{media}","digest":"{digest}","size":{size}}}"#)
    }

    /// A layout in `d` whose image `name` is a manifest behind `depth` nested indexes.
    fn nested_layout(d: &Path, depth: usize, name: &str) {
        std::fs::create_dir_all(d.join("blobs/sha256")).unwrap();
        std::fs::write(d.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        let config = br#"{"config":{"Labels":{"claw.type":"x"}}}"#;
        let config = descriptor("application/vnd.oci.image.config.v1+json", &blob(d, config), config.len());
        let manifest = format!(r#"{{"schemaVersion":2,"config":{config},"layers":[]}}"#);
        let mut top = descriptor("application/vnd.oci.image.manifest.v1+json", &blob(d, manifest.as_bytes()), manifest.len());
        for _ in 0..depth {
            let index = format!(r#"{{"schemaVersion":2,"manifests":[{top}]}}"#);
            top = descriptor("application/vnd.oci.image.index.v1+json", &blob(d, index.as_bytes()), index.len());
        }
        let named = top.replacen('{', &format!(r#"{{"annotations":{{"org.opencontainers.image.ref.name":"{name}"}},"#), 1);
        std::fs::write(d.join("index.json"), format!(r#"{{"schemaVersion":2,"manifests":[{named}]}}"#)).unwrap();
    }

    #[test]
    fn deeply_nested_indexes_are_refused_without_recursion() {
        let dir = tempfile::tempdir().unwrap();
        // 20,000 indexes, each naming the next: a stack overflow for a recursive reader.
        nested_layout(dir.path(), 20_000, "deep:1");
        let err = Layout::open_oci(dir.path()).err().unwrap();
        assert_eq!(err.code, diags::CORRUPT);
        assert!(err.message.contains("nest deeper than 8 levels"), "{}", err.message);
    }

    #[test]
    fn a_shallow_index_still_resolves() {
        let dir = tempfile::tempdir().unwrap();
        nested_layout(dir.path(), MAX_INDEX_DEPTH, "ok:1");
        let layout = Layout::open_oci(dir.path()).unwrap();
        assert_eq!(layout.inspect("ok:1").unwrap().labels["claw.type"], "x");
    }

    #[test]
    fn a_fifo_or_a_symlink_in_a_layout_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("blobs/sha256")).unwrap();
        std::fs::write(d.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
        let c = std::ffi::CString::new(d.join("index.json").into_os_string().into_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = Layout::open_oci(d).err().unwrap();
        assert!(err.message.contains("not a regular file"), "{}", err.message);
        std::fs::remove_file(d.join("index.json")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", d.join("index.json")).unwrap();
        assert_eq!(Layout::open_oci(d).err().unwrap().code, diags::CORRUPT);
    }
}
