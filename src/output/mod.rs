//! The compiled tree in memory ([`ArtifactSet`]), its JSON encoding, and writing it.

pub mod check;
pub mod json;
pub mod write;

use std::collections::BTreeMap;

/// One output file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    pub bytes: Vec<u8>,
    /// Holds a literal secret: written with mode 0600.
    pub secret: bool,
}

/// Every output file by `/`-separated path relative to the output directory. A BTreeMap,
/// so iteration (and everything derived from it) is sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArtifactSet(pub BTreeMap<String, Artifact>);

impl ArtifactSet {
    pub fn insert(&mut self, path: impl Into<String>, bytes: Vec<u8>) {
        self.0.insert(path.into(), Artifact { bytes, secret: false });
    }

    /// The set plus `.clawc-manifest.json`, the list of files clawc owns in the output
    /// directory (what a later run may replace or delete).
    pub fn with_manifest(mut self) -> Self {
        let files: Vec<&String> = self.0.keys().filter(|k| *k != write::MANIFEST).collect();
        let bytes = json::to_go_json(&serde_json::json!({ "generator": "clawc", "files": files }));
        self.insert(write::MANIFEST, bytes);
        self
    }

    pub fn insert_secret(&mut self, path: impl Into<String>, bytes: Vec<u8>, secret: bool) {
        self.0.insert(path.into(), Artifact { bytes, secret });
    }
}
