//! The compiled tree in memory ([`ArtifactSet`]) and its byte-exact JSON encoding: what
//! projection produces and the output layer writes. A leaf every layer may use.

pub(crate) mod json;

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

    pub fn insert_secret(&mut self, path: impl Into<String>, bytes: Vec<u8>, secret: bool) {
        self.0.insert(path.into(), Artifact { bytes, secret });
    }
}
