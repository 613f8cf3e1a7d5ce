//! A decoded descriptor as the services of a compile share it, and as `compile --watch`
//! keeps it from one compile to the next ([`super::Decoded`]): with the digest of its
//! content, made the first time it is hashed. The render keys hash every descriptor of
//! the registry on each compile, every tool's schemas included; a watch's compile after
//! an edit of the pod hashes only the descriptors that changed.

use super::Descriptor;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

/// A descriptor and, once asked for, the SHA-256 of what its `Hash` feeds.
#[derive(Clone, Debug)]
pub struct SharedDescriptor {
    descriptor: Descriptor,
    digest: OnceLock<[u8; 32]>,
}

impl SharedDescriptor {
    pub(crate) fn new(descriptor: Descriptor) -> Self {
        SharedDescriptor { descriptor, digest: OnceLock::new() }
    }

    /// `descriptor`, whose digest is known to be `digest` (kept with it by
    /// [`super::Cache`]).
    pub(crate) fn with_digest(descriptor: Descriptor, digest: [u8; 32]) -> Self {
        SharedDescriptor { descriptor, digest: OnceLock::from(digest) }
    }

    /// The descriptor to change (its digest is made again when next asked for).
    pub(crate) fn get_mut(&mut self) -> &mut Descriptor {
        self.digest = OnceLock::new();
        &mut self.descriptor
    }

    pub(crate) fn into_inner(self) -> Descriptor {
        self.descriptor
    }

    pub(crate) fn digest(&self) -> &[u8; 32] {
        self.digest.get_or_init(|| crate::digest::of_hash(&self.descriptor))
    }
}

impl std::ops::Deref for SharedDescriptor {
    type Target = Descriptor;

    fn deref(&self) -> &Descriptor {
        &self.descriptor
    }
}

/// Feeds the digest of the content, not the content: equal descriptors feed the same
/// bytes, and different ones (but for a SHA-256 collision) different bytes.
impl Hash for SharedDescriptor {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.digest().hash(state);
    }
}

impl PartialEq for SharedDescriptor {
    fn eq(&self, other: &Self) -> bool {
        self.descriptor == other.descriptor
    }
}

impl From<Descriptor> for Arc<SharedDescriptor> {
    fn from(descriptor: Descriptor) -> Self {
        Arc::new(SharedDescriptor::new(descriptor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sourcemap::SourceMap;

    fn descriptor(tools: &str) -> Descriptor {
        let mut sources = SourceMap::default();
        let text = format!(r#"{{"version":2,"mcp":{{"transport":"http","path":"/mcp"}},"tools":[{tools}]}}"#);
        let id = sources.add("d.json", text);
        crate::describe::decode(id, sources.get(id)).0.expect("decodes")
    }

    #[test]
    fn a_shared_descriptor_hashes_as_its_content_and_again_once_changed() {
        let tool = |name: &str| format!(r#"{{"name":"{name}","description":"t","inputSchema":{{"type":"object"}}}}"#);
        let a = SharedDescriptor::new(descriptor(&tool("a")));
        let same = SharedDescriptor::new(descriptor(&tool("a")));
        let b = SharedDescriptor::new(descriptor(&tool("b")));
        let of = |d: &SharedDescriptor| crate::digest::of_hash(d);
        assert_eq!(of(&a), of(&same));
        assert_ne!(of(&a), of(&b));
        assert!(a.digest.get().is_some(), "made once, when first hashed");
        let mut changed = a.clone();
        changed.get_mut().tools[0].name = "b".into();
        assert!(changed.digest.get().is_none(), "forgotten when changed");
        assert_ne!(of(&changed), of(&a));
        assert_eq!(of(&changed), of(&SharedDescriptor::new(changed.descriptor.clone())));
    }
}
