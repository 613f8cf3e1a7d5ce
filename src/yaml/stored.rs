//! The pod's YAML tree kept in the user cache for the next process
//! (`<cache>/pod/v1/<SHA-256 of the pod's canonical path>`), as a watch keeps it in
//! memory ([`super::kept`]): a one-shot compile after an edit inside one service's entry
//! parses that entry alone into the stored tree ([`super::splice`]) instead of the whole
//! file (7 ms of the 3,000-agent pod's 87 KB).
//!
//! The file holds the text and the tree a whole parse of it gave, for one clawc build
//! (the SHA-256 of its identity), checksummed and bounded; the splice then takes the tree
//! only under the rules that make it the tree a whole parse of the new text gives, node
//! for node and span for span. It is trusted as the stat record is: only clawc writes
//! it, in the user cache, never in the repository under review; anything else (another
//! build, a damaged or foreign file) is a whole parse.

use super::{Kind, Node, Parsed};
use crate::sourcemap::{FileId, Loc, Span};
use std::path::Path;

const MAGIC: &[u8; 16] = b"clawc-pod-tree-1";

/// Writes `text` and its whole parse `parsed` to `at`, for the build `build` (errors are
/// ignored: the next compile parses whole).
pub(crate) fn store(at: &Path, build: &[u8; 32], text: &str, parsed: &Parsed) {
    let mut b = Vec::with_capacity(64 + text.len() * 3);
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(build);
    for n in [parsed.nodes, parsed.bytes, text.len()] {
        b.extend_from_slice(&(n as u64).to_le_bytes());
    }
    b.push(u8::from(parsed.plain));
    b.extend_from_slice(text.as_bytes());
    put(&mut b, &parsed.root);
    crate::disk::store_sealed(at, &b);
}

/// The text and tree stored at `at` for `build`, the tree's nodes located in `file`;
/// `None` unless the file is whole.
pub(crate) fn load(at: &Path, build: &[u8; 32], file: FileId) -> Option<(String, Parsed)> {
    let body = crate::disk::load_sealed(at, &[&MAGIC[..], build].concat())?;
    let mut r = Reader { b: &body, at: 48, file };
    let (nodes, bytes_charged, text_len) = (r.u64()?, r.u64()?, r.u64()?);
    let plain = r.u8()? == 1;
    let text = String::from_utf8(r.take(usize::try_from(text_len).ok()?)?.to_vec()).ok()?;
    let root = r.node(0)?;
    (r.at == body.len())
        .then_some((text, Parsed { root, nodes: usize::try_from(nodes).ok()?, bytes: usize::try_from(bytes_charged).ok()?, plain }))
}

fn put(b: &mut Vec<u8>, n: &Node) {
    let Span { start, end, line, col } = n.loc.span;
    for v in [start as u64, end as u64] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&line.to_le_bytes());
    b.extend_from_slice(&col.to_le_bytes());
    match &n.kind {
        Kind::Scalar { text, plain } => {
            b.push(u8::from(*plain));
            b.extend_from_slice(&(text.len() as u64).to_le_bytes());
            b.extend_from_slice(text.as_bytes());
        }
        Kind::Seq(items) => {
            b.push(2);
            b.extend_from_slice(&(items.len() as u64).to_le_bytes());
            items.iter().for_each(|i| put(b, i));
        }
        Kind::Map(entries) => {
            b.push(3);
            b.extend_from_slice(&(entries.len() as u64).to_le_bytes());
            for (k, v) in entries {
                put(b, k);
                put(b, v);
            }
        }
    }
}

/// Reads what [`put`] wrote, trusting no length: each is checked against what is left.
struct Reader<'b> {
    b: &'b [u8],
    at: usize,
    file: FileId,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A count of items each at least one node long: never more than the bytes left.
    fn count(&mut self) -> Option<usize> {
        usize::try_from(self.u64()?).ok().filter(|&n| n <= self.b.len() - self.at)
    }

    fn node(&mut self, depth: usize) -> Option<Node> {
        // A whole parse nests at most `MAX_DEPTH` collections (their keys and scalars one
        // further): a deeper tree is not one this build stored.
        if depth > super::MAX_DEPTH + 1 {
            return None;
        }
        let (start, end) = (usize::try_from(self.u64()?).ok()?, usize::try_from(self.u64()?).ok()?);
        let (line, col) = (self.u32()?, self.u32()?);
        let loc = Loc { file: self.file, span: Span { start, end, line, col } };
        let kind = match self.u8()? {
            t @ (0 | 1) => {
                let len = self.count()?;
                Kind::Scalar { text: String::from_utf8(self.take(len)?.to_vec()).ok()?, plain: t == 1 }
            }
            2 => {
                let n = self.count()?;
                Kind::Seq((0..n).map(|_| self.node(depth + 1)).collect::<Option<_>>()?)
            }
            3 => {
                let n = self.count()?;
                Kind::Map((0..n).map(|_| Some((self.node(depth + 1)?, self.node(depth + 1)?))).collect::<Option<_>>()?)
            }
            _ => return None,
        };
        Some(Node { kind, loc })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sourcemap::SourceMap;

    #[test]
    fn a_stored_tree_is_the_parse_it_was_and_a_damaged_file_is_none() {
        let text =
            "x-claw: {pod: p}\nservices:\n  a:\n    image: \"x\"\n    x-claw:\n      tools: [b, {service: c, allow: [d]}]\n  b: {}\n";
        let mut map = SourceMap::default();
        let other = map.add("other", "");
        let id = map.add("claw-pod.yml", text);
        let parsed = super::super::parse_counted(id, map.get(id), super::super::MAX_DEPTH).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("c").join("tree");
        let build = [7; 32];
        store(&at, &build, text, &parsed);
        let (kept, back) = load(&at, &build, id).expect("stored");
        assert_eq!((kept.as_str(), &back), (text, &parsed));
        assert_ne!(load(&at, &build, other).unwrap().1, parsed, "located in the file asked for");
        assert!(load(&at, &[8; 32], id).is_none(), "another build's");
        let whole = std::fs::read(&at).unwrap();
        for i in 0..whole.len() {
            let mut b = whole.clone();
            b[i] ^= 0x41;
            std::fs::write(&at, &b).unwrap();
            assert!(load(&at, &build, id).is_none(), "byte {i}");
            std::fs::write(&at, &whole[..i]).unwrap();
            assert!(load(&at, &build, id).is_none(), "cut at {i}");
        }
        // A symlink to a whole file is not followed.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, &whole).unwrap();
        std::fs::remove_file(&at).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &at).unwrap();
        assert!(load(&at, &build, id).is_none(), "read through a symlink");
    }
}
