//! The pod's YAML tree kept by one compile in a process for the next (`compile --watch`):
//! when the pod changed inside one service's entry, the next compile parses that entry
//! alone into the kept tree ([`super::splice`]) instead of the whole file, the largest
//! part of a watched edit's parse. What it gives is the tree a whole parse gives, so a
//! compile cannot tell the two apart; anything the splice cannot vouch for is parsed
//! whole. One tree is held, the last compile's.

use super::{MAX_DEPTH, Node, Parsed, parse_counted, splice::splice};
use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, SourceFile};
use std::sync::{Arc, Mutex, PoisonError};

/// A parsed pod and the text it was parsed from.
pub(crate) struct Tree {
    file: FileId,
    name: String,
    text: Arc<str>,
    parsed: Parsed,
}

impl Tree {
    pub(crate) fn root(&self) -> &Node {
        &self.parsed.root
    }
}

/// The last compile's pod tree: none kept unless made with [`KeptTree::kept`]. Clones
/// share what is kept.
#[derive(Clone, Default)]
pub struct KeptTree(Option<Arc<Mutex<Option<Tree>>>>);

impl std::fmt::Debug for KeptTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.0.as_ref().map(|t| t.lock().unwrap_or_else(PoisonError::into_inner).is_some());
        f.debug_tuple("KeptTree").field(&held).finish()
    }
}

impl KeptTree {
    /// One that keeps each compile's pod tree for the next.
    pub fn kept() -> KeptTree {
        KeptTree(Some(Arc::default()))
    }

    /// The tree of `src` (file `file`): the kept one with the edited entry parsed again,
    /// when the kept tree is of the same file and the edit lies inside one entry; else
    /// the whole text parsed. The kept tree is taken: give the result back with
    /// [`KeptTree::keep`].
    pub(crate) fn parse(&self, file: FileId, src: &SourceFile) -> Result<Tree, Vec<Diagnostic>> {
        let kept = self.0.as_ref().and_then(|t| t.lock().unwrap_or_else(PoisonError::into_inner).take());
        let made = |parsed| Tree { file, name: src.name.clone(), text: Arc::clone(&src.text), parsed };
        let spliced = kept.filter(|k| k.file == file && k.name == src.name).and_then(|k| splice(&k.text, k.parsed, file, src));
        match spliced {
            Some(parsed) => Ok(made(parsed)),
            None => parse_counted(file, src, MAX_DEPTH).map(made),
        }
    }

    /// Keeps `tree` for the next compile (or drops it, when nothing is kept).
    pub(crate) fn keep(&self, tree: Tree) {
        if let Some(t) = &self.0 {
            *t.lock().unwrap_or_else(PoisonError::into_inner) = Some(tree);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sourcemap::SourceMap;

    #[test]
    fn a_kept_tree_is_spliced_only_for_the_same_file_and_name() {
        let before = "services:\n  a:\n    image: x\n  b: {}\n";
        let after = before.replace("image: x", "image: y");
        let mut map = SourceMap::default();
        let first = map.add("claw-pod.yml", before);
        let second = map.add("claw-pod.yml", after.as_str());
        let other = map.add("other.yml", after.as_str());
        let kept = KeptTree::kept();
        let whole = |id| parse_counted(id, map.get(id), MAX_DEPTH).unwrap();
        kept.keep(kept.parse(first, map.get(first)).unwrap());
        let tree = kept.parse(second, map.get(second)).unwrap();
        assert_eq!(tree.parsed, whole(second), "the other file id's tree is not the one parsed");
        kept.keep(tree);
        assert_eq!(kept.parse(other, map.get(other)).unwrap().parsed, whole(other));
        assert!(format!("{kept:?}").contains("false"), "the tree is taken until it is given back");
        let none = KeptTree::default();
        none.keep(none.parse(first, map.get(first)).unwrap());
        assert_eq!(format!("{none:?}"), "KeptTree(None)");
    }
}
