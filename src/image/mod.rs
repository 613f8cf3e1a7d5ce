//! Container images as a source of service self-descriptions. A service describes
//! itself from inside its image: labels (`claw.describe`, `claw.tools`, `claw.mcp.path`,
//! `claw.type`, `claw.skill.emit`) and the files they name. clawc reads images, never
//! running containers, from three kinds of [`store`]: a Docker Engine ([`docker`]), an
//! OCI image layout directory and a `docker save` archive ([`layout`]), all ending in the
//! same [`ImageFacts`].
//!
//! This is an I/O edge: [`fetch`] reads every image the pod names (bounded concurrency,
//! a content-addressed [`cache`]) before the pure passes run; the descriptor source for
//! images then only looks facts up. The pass over an image's layers that reads its files
//! also tells its [`executables`] (the CLIs an agent image has).

pub(crate) mod cache;
pub(crate) mod diags;
pub(crate) mod docker;
pub(crate) mod executables;
pub(crate) mod fetch;
pub(crate) mod layers;
pub(crate) mod layout;
pub(crate) mod usage;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

/// The label naming the descriptor, and the path tried when it is absent.
pub(crate) const DESCRIBE_LABEL: &str = "claw.describe";
pub(crate) const DESCRIBE_IMPLICIT: &str = "/.claw-describe.json";
/// The label naming a baked MCP `tools/list` snapshot, and its implicit path.
pub(crate) const TOOLS_LABEL: &str = "claw.tools";
pub(crate) const TOOLS_IMPLICIT: &str = "/.claw-tools.json";
pub(crate) const MCP_PATH_LABEL: &str = "claw.mcp.path";
pub(crate) const TYPE_LABEL: &str = "claw.type";
pub(crate) const SKILL_EMIT_LABEL: &str = "claw.skill.emit";

/// One place to look for images (`--images`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageSource {
    /// The Docker Engine when it answers, else nothing.
    Auto,
    /// The Docker Engine, which must answer.
    Docker,
    /// Read no image at all.
    None,
    /// An OCI image layout directory; images chosen by `org.opencontainers.image.ref.name`.
    Oci(PathBuf),
    /// A `docker save` archive (legacy or OCI-in-tar layout).
    Archive(PathBuf),
}

impl FromStr for ImageSource {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(ImageSource::Auto),
            "docker" => Ok(ImageSource::Docker),
            "none" => Ok(ImageSource::None),
            _ => match s.split_once(':') {
                Some(("oci", p)) if !p.is_empty() => Ok(ImageSource::Oci(p.into())),
                Some(("archive", p)) if !p.is_empty() => Ok(ImageSource::Archive(p.into())),
                _ => Err("expected auto, docker, none, oci:DIR or archive:TAR".to_string()),
            },
        }
    }
}

impl std::fmt::Display for ImageSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImageSource::Auto => f.write_str("auto"),
            ImageSource::Docker => f.write_str("docker"),
            ImageSource::None => f.write_str("none"),
            ImageSource::Oci(p) => write!(f, "oci:{}", p.display()),
            ImageSource::Archive(p) => write!(f, "archive:{}", p.display()),
        }
    }
}

/// What reading one file out of an image gave. Cached by image ID, so every outcome is
/// data (the same image always gives the same outcome).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum FileRead {
    Text(String),
    Missing,
    /// A directory, device, fifo….
    NotAFile,
    /// A link whose target (given) climbs above the image root.
    Escape(String),
    TooLarge(u64),
    /// Not UTF-8: the offset of the first bad byte.
    NotUtf8(usize),
    TooManyLinks,
}

impl FileRead {
    pub fn from_bytes(bytes: Vec<u8>) -> FileRead {
        if bytes.len() as u64 > layers::MAX_FILE_BYTES {
            return FileRead::TooLarge(bytes.len() as u64);
        }
        match String::from_utf8(bytes) {
            Ok(t) => FileRead::Text(t),
            Err(e) => FileRead::NotUtf8(e.utf8_error().valid_up_to()),
        }
    }
}

/// An image as a store knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ImageInfo {
    /// Content address of the image (Docker image ID / OCI config digest).
    pub id: String,
    pub labels: BTreeMap<String, String>,
    /// The `PATH` its config's `Env` sets (the last one), `None` when it sets none.
    pub path: Option<String>,
}

/// Everything clawc read from one image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ImageFacts {
    pub reference: String,
    /// The source that had it (`docker`, `oci:DIR`, `archive:TAR`).
    pub source: String,
    pub info: ImageInfo,
    /// Image path → what reading it gave.
    pub files: BTreeMap<String, FileRead>,
    /// The names of the executables in the image's `PATH` directories (its config's
    /// `Env` `PATH`, else the Docker default), when its layers were read; `None` when they
    /// were not (only labels were wanted, or the source gives no layers).
    pub executables: Option<std::collections::BTreeSet<String>>,
}

impl ImageFacts {
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.info.labels.get(key).map(|s| s.trim()).filter(|s| !s.is_empty())
    }

    /// The descriptor path and whether it was named by a label.
    pub(crate) fn describe_path(&self) -> (String, bool) {
        labelled_path(self.label(DESCRIBE_LABEL), DESCRIBE_IMPLICIT)
    }

    pub(crate) fn tools_path(&self) -> (String, bool) {
        labelled_path(self.label(TOOLS_LABEL), TOOLS_IMPLICIT)
    }

    /// `<reference>:<path>`: how diagnostics and the report name a file in this image.
    pub(crate) fn file_name(&self, path: &str) -> String {
        format!("{}:{}", self.reference, path)
    }
}

/// Paths in images are absolute; a relative label value is taken from `/`. A value that
/// climbs above `/` is kept as written (reading it gives [`FileRead::Escape`]).
pub(crate) fn labelled_path(label: Option<&str>, implicit: &str) -> (String, bool) {
    match label {
        Some(l) => (image_path(l).unwrap_or_else(|| l.to_string()), true),
        None => (implicit.to_string(), false),
    }
}

/// An absolute, normalised image path for `raw`, `None` when `..` climbs above `/`.
pub(crate) fn image_path(raw: &str) -> Option<String> {
    layers::resolve_link("/", raw)
}

/// The result of looking for every image of a pod.
#[derive(Clone, Debug, Default)]
pub(crate) struct ImageSet {
    /// Found images by the reference the pod writes (shared: several services may name
    /// one image, and descriptor sources hand the facts on).
    pub found: BTreeMap<String, std::sync::Arc<ImageFacts>>,
    /// References no source had, with what each source said.
    pub missing: BTreeMap<String, Vec<String>>,
    /// The sources consulted, in order (`docker (unreachable: …)` included), for messages.
    pub tried: Vec<String>,
    /// `--images none`: images were deliberately not read.
    pub disabled: bool,
}

impl ImageSet {
    /// For a reference no source had: what was tried, in words (`None` when it was found
    /// or never looked for).
    pub(crate) fn tried_for(&self, reference: &str) -> Option<String> {
        let why_not = self.missing.get(reference)?;
        let tried = if why_not.is_empty() { self.tried.join("; ") } else { why_not.join("; ") };
        Some(if tried.is_empty() { "no image source".to_string() } else { tried })
    }
}

/// Normalises a reference the way Docker names images: `alpine` → `alpine:latest`,
/// `docker.io/library/alpine:3` → `alpine:3`, so the pod and a store can be compared.
pub(crate) fn normalize_ref(r: &str) -> String {
    let r = r.trim();
    let r = r.strip_prefix("docker.io/").or_else(|| r.strip_prefix("index.docker.io/")).unwrap_or(r);
    let r = r.strip_prefix("library/").unwrap_or(r);
    let last = r.rsplit('/').next().unwrap_or(r);
    if last.contains(':') || last.contains('@') { r.to_string() } else { format!("{r}:latest") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_and_refs() {
        assert_eq!("oci:dir".parse::<ImageSource>(), Ok(ImageSource::Oci("dir".into())));
        assert_eq!("archive:a.tar".parse::<ImageSource>(), Ok(ImageSource::Archive("a.tar".into())));
        assert!("oci:".parse::<ImageSource>().is_err());
        assert!("podman".parse::<ImageSource>().is_err());
        assert_eq!(normalize_ref("alpine"), "alpine:latest");
        assert_eq!(normalize_ref("docker.io/library/alpine:3"), "alpine:3");
        assert_eq!(normalize_ref("localhost:5000/x"), "localhost:5000/x:latest");
        assert_eq!(normalize_ref("ghcr.io/a/b@sha256:00"), "ghcr.io/a/b@sha256:00");
    }

    #[test]
    fn label_paths_stay_in_the_image() {
        assert_eq!(labelled_path(Some("claw/d.json"), DESCRIBE_IMPLICIT), ("/claw/d.json".to_string(), true));
        assert_eq!(labelled_path(Some("/a/./b/../d.json"), DESCRIBE_IMPLICIT), ("/a/d.json".to_string(), true));
        assert_eq!(labelled_path(None, TOOLS_IMPLICIT), ("/.claw-tools.json".to_string(), false));
        // Climbing above `/` is kept as written, so reading it reports the escape.
        assert_eq!(labelled_path(Some("../../etc/passwd"), DESCRIBE_IMPLICIT).0, "../../etc/passwd");
        assert_eq!(image_path("/x/../../etc/passwd"), None);
    }
}
