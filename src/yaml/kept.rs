//! The pod's YAML tree kept by one compile in a process for the next (`compile --watch`):
//! when the pod changed inside one service's entry, the next compile parses that entry
//! alone into the kept tree ([`super::splice`]) instead of the whole file, the largest
//! part of a watched edit's parse. What it gives is the tree a whole parse gives, so a
//! compile cannot tell the two apart; anything the splice cannot vouch for is parsed
//! whole. One tree is held, the last compile's.

use super::{MAX_DEPTH, Node, Parsed, parse_counted, splice::splice};
use crate::diag::Diagnostic;
use crate::sourcemap::{FileId, SourceFile};
use std::path::Path;
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
    ///
    /// Outside a watch, `stored` (a cache file, for the build whose identity has that
    /// SHA-256; see [`super::stored`]) plays the kept tree's part: the tree the last run
    /// stored there is spliced, and the tree made is stored for the next run.
    pub(crate) fn parse(&self, file: FileId, src: &SourceFile, stored: Option<(&Path, &[u8; 32])>) -> Result<Tree, Vec<Diagnostic>> {
        let kept = self.0.as_ref().and_then(|t| t.lock().unwrap_or_else(PoisonError::into_inner).take());
        let made = |parsed| Tree { file, name: src.name.clone(), text: Arc::clone(&src.text), parsed };
        let stored = stored.filter(|_| self.0.is_none());
        let before = match kept {
            Some(k) => (k.file == file && k.name == src.name).then_some((k.text, k.parsed)),
            None => stored.and_then(|(at, build)| super::stored::load(at, build, file)).map(|(text, parsed)| (Arc::from(text), parsed)),
        };
        let unchanged = before.as_ref().is_some_and(|(text, _)| *text == src.text);
        let tree = match before.and_then(|(text, parsed)| splice(&text, parsed, file, src)) {
            Some(parsed) => made(parsed),
            None => made(parse_counted(file, src, MAX_DEPTH)?),
        };
        if let Some((at, build)) = stored.filter(|_| !unchanged) {
            super::stored::store(at, build, &tree.text, &tree.parsed);
        }
        Ok(tree)
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
        kept.keep(kept.parse(first, map.get(first), None).unwrap());
        let tree = kept.parse(second, map.get(second), None).unwrap();
        assert_eq!(tree.parsed, whole(second), "the other file id's tree is not the one parsed");
        kept.keep(tree);
        assert_eq!(kept.parse(other, map.get(other), None).unwrap().parsed, whole(other));
        assert!(format!("{kept:?}").contains("false"), "the tree is taken until it is given back");
        let none = KeptTree::default();
        none.keep(none.parse(first, map.get(first), None).unwrap());
        assert_eq!(format!("{none:?}"), "KeptTree(None)");
    }
}
