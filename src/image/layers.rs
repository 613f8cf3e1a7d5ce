//! Finding files in an image's layer stack without extracting it: layers are read as
//! tar streams (gzip, zstd or plain, told apart by their magic bytes), whiteouts and
//! opaque directories are honoured, and symlinks and hardlinks are followed inside the
//! image root. A link that climbs above `/` is refused rather than clamped, so a label
//! can never make clawc read something the image author did not put at that path.

use super::FileRead;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};

/// Largest file read out of an image (descriptors, snapshots, skills).
pub const MAX_FILE_BYTES: u64 = crate::source::fs::MAX_INPUT_BYTES;

/// How many links one lookup may follow (Linux uses 40 as well).
const MAX_HOPS: usize = 40;

/// What one layer says about one path.
#[derive(Clone, Debug)]
enum Node {
    File(FileRead),
    Dir,
    Symlink(String),
    Hardlink(String),
}

/// What the layers say about the paths looked for (and their ancestors).
#[derive(Default)]
struct Layer {
    nodes: BTreeMap<String, Node>,
    /// Paths deleted from lower layers by `.wh.<name>`.
    whiteouts: BTreeSet<String>,
    /// Directories whose lower-layer contents are hidden by `.wh..wh..opq`.
    opaque: BTreeSet<String>,
}

/// An error reading a layer: the layer's bytes are not a readable tar stream.
#[derive(Debug)]
pub struct LayerError(pub String);

/// Normalises an absolute image path: `/a/./b//c/` → `/a/b/c`. `..` is kept out by the
/// caller ([`resolve_link`]); here it simply cannot climb above `/`.
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// The target of a link at `at`, or `None` when it climbs above the image root.
pub(crate) fn resolve_link(at: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    if !target.starts_with('/') {
        parts.extend(at.split('/').filter(|p| !p.is_empty()));
        parts.pop();
    }
    for p in target.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// `/a/b/c` → `/a`, `/a/b` (strict ancestors, outermost first).
fn ancestors(path: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    (1..parts.len()).map(|n| format!("/{}", parts[..n].join("/"))).collect()
}

fn is_under(path: &str, dir: &str) -> bool {
    dir == "/" || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
}

/// Opens a layer blob, whatever its compression.
pub fn decompress<'a>(reader: impl Read + 'a) -> std::io::Result<Box<dyn Read + 'a>> {
    let mut buf = BufReader::new(reader);
    let magic = buf.fill_buf()?.get(..4).map(<[u8]>::to_vec).unwrap_or_default();
    Ok(if magic.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::MultiGzDecoder::new(buf))
    } else if magic == [0x28, 0xb5, 0x2f, 0xfd] {
        Box::new(zstd::stream::read::Decoder::with_buffer(buf)?)
    } else {
        Box::new(buf)
    })
}

/// Indexes one layer for `wanted` paths (and everything on their way).
fn index_layer(reader: impl Read, wanted: &BTreeSet<String>) -> Result<Layer, LayerError> {
    let interesting: BTreeSet<String> = wanted.iter().flat_map(|w| ancestors(w).into_iter().chain([w.clone()])).collect();
    let mut layer = Layer::default();
    let mut archive = tar::Archive::new(decompress(reader).map_err(|e| LayerError(e.to_string()))?);
    let entries = archive.entries().map_err(|e| LayerError(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| LayerError(e.to_string()))?;
        let raw = entry.path_bytes();
        let path = normalize(&String::from_utf8_lossy(&raw));
        // Tars may leave parent directories implicit: an entry proves its parents exist.
        for anc in ancestors(&path).into_iter().filter(|a| interesting.contains(a)) {
            layer.nodes.entry(anc).or_insert(Node::Dir);
        }
        let (dir, base) = path.rsplit_once('/').unwrap_or(("", &path));
        let dir = if dir.is_empty() { "/".to_string() } else { dir.to_string() };
        if base == ".wh..wh..opq" {
            layer.opaque.insert(dir);
            continue;
        }
        if let Some(name) = base.strip_prefix(".wh.") {
            let gone = normalize(&format!("{dir}/{name}"));
            layer.whiteouts.insert(gone);
            continue;
        }
        if !interesting.contains(&path) {
            continue;
        }
        let link = || entry.link_name_bytes().map(|l| String::from_utf8_lossy(&l).into_owned()).unwrap_or_default();
        let node = match entry.header().entry_type() {
            tar::EntryType::Directory => Node::Dir,
            tar::EntryType::Symlink => Node::Symlink(link()),
            tar::EntryType::Link => Node::Hardlink(normalize(&link())),
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if wanted.contains(&path) {
                    let size = entry.header().size().map_err(|e| LayerError(e.to_string()))?;
                    Node::File(read_entry(&mut entry, size).map_err(|e| LayerError(e.to_string()))?)
                } else {
                    Node::File(FileRead::Missing)
                }
            }
            _ => Node::File(FileRead::NotAFile),
        };
        layer.nodes.insert(path, node);
    }
    Ok(layer)
}

/// A tar entry's contents of `size` bytes, refused above [`MAX_FILE_BYTES`] unread.
pub(crate) fn read_entry(entry: &mut impl Read, size: u64) -> std::io::Result<FileRead> {
    if size > MAX_FILE_BYTES {
        return Ok(FileRead::TooLarge(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    entry.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    Ok(FileRead::from_bytes(bytes))
}

/// The node for `path` seen from the top of the stack, `None` when absent or deleted.
fn lookup<'l>(layers: &'l [Layer], path: &str) -> Option<&'l Node> {
    for layer in layers.iter().rev() {
        if let Some(n) = layer.nodes.get(path) {
            return Some(n);
        }
        let deleted = layer.whiteouts.contains(path) || ancestors(path).iter().any(|a| layer.whiteouts.contains(a));
        if deleted || layer.opaque.iter().any(|d| is_under(path, d)) {
            return None;
        }
    }
    None
}

enum Outcome {
    Done(FileRead),
    /// A link leads to a path that was not indexed: walk the layers again with it.
    Need(String),
}

/// Follows `start` through the indexed layers (bottom first) to a file.
fn resolve(layers: &[Layer], wanted: &BTreeSet<String>, start: &str) -> Outcome {
    let mut path = normalize(start);
    let mut hops = 0;
    'restart: loop {
        if hops > MAX_HOPS {
            return Outcome::Done(FileRead::TooManyLinks);
        }
        if !wanted.contains(&path) {
            return Outcome::Need(path);
        }
        for anc in ancestors(&path) {
            match lookup(layers, &anc) {
                Some(Node::Symlink(t)) => {
                    hops += 1;
                    let Some(base) = resolve_link(&anc, t) else { return Outcome::Done(FileRead::Escape(t.clone())) };
                    path = normalize(&format!("{base}/{}", &path[anc.len()..]));
                    continue 'restart;
                }
                Some(Node::File(_) | Node::Hardlink(_)) => return Outcome::Done(FileRead::Missing),
                Some(Node::Dir) | None => {}
            }
        }
        match lookup(layers, &path) {
            None => return Outcome::Done(FileRead::Missing),
            Some(Node::Dir) => return Outcome::Done(FileRead::NotAFile),
            Some(Node::File(r)) => return Outcome::Done(r.clone()),
            Some(Node::Symlink(t)) => {
                hops += 1;
                let Some(next) = resolve_link(&path, t) else { return Outcome::Done(FileRead::Escape(t.clone())) };
                path = next;
            }
            Some(Node::Hardlink(t)) => {
                hops += 1;
                path = t.clone();
            }
        }
    }
}

/// Reads `paths` from an image of `count` layers (bottom first), opened by `open`.
/// Every layer is streamed once per round; a round is added only when a link leads to a
/// path nobody asked for.
pub fn find_files<'a>(
    count: usize,
    mut open: impl FnMut(usize) -> Result<Box<dyn Read + 'a>, LayerError>,
    paths: &[String],
) -> Result<BTreeMap<String, FileRead>, LayerError> {
    let mut wanted: BTreeSet<String> = paths.iter().map(|p| normalize(p)).collect();
    for _round in 0..8 {
        let mut layers = Vec::with_capacity(count);
        for i in 0..count {
            layers.push(index_layer(open(i)?, &wanted)?);
        }
        let mut out = BTreeMap::new();
        let mut more = BTreeSet::new();
        for p in paths {
            match resolve(&layers, &wanted, p) {
                Outcome::Done(r) => {
                    out.insert(p.clone(), r);
                }
                Outcome::Need(n) => {
                    more.insert(n);
                }
            }
        }
        if more.is_empty() {
            return Ok(out);
        }
        wanted.extend(more);
    }
    Ok(paths.iter().map(|p| (p.clone(), FileRead::TooManyLinks)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(entries: &[(&str, tar::EntryType, &str)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, kind, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_mode(0o644);
            match kind {
                tar::EntryType::Symlink | tar::EntryType::Link => {
                    h.set_size(0);
                    b.append_link(&mut h, path, data).unwrap();
                }
                _ => {
                    h.set_size(data.len() as u64);
                    b.append_data(&mut h, path, data.as_bytes()).unwrap();
                }
            }
        }
        b.into_inner().unwrap()
    }

    fn find(layers: &[Vec<u8>], path: &str) -> FileRead {
        let r = find_files(layers.len(), |i| Ok(Box::new(&layers[i][..]) as Box<dyn Read>), &[path.to_string()]).unwrap();
        r[path].clone()
    }

    use tar::EntryType::{Directory as D, Link as H, Regular as F, Symlink as L};

    #[test]
    fn upper_layers_win_and_whiteouts_delete() {
        let l0 = layer(&[("etc/a.json", F, "old"), ("etc/b.json", F, "b"), ("opt/x/c", F, "c")]);
        let l1 = layer(&[("etc/a.json", F, "new"), ("etc/.wh.b.json", F, ""), ("opt/x/.wh..wh..opq", F, ""), ("opt/x/d", F, "d")]);
        let ls = [l0, l1];
        assert_eq!(find(&ls, "/etc/a.json"), FileRead::Text("new".into()));
        assert_eq!(find(&ls, "/etc/b.json"), FileRead::Missing);
        assert_eq!(find(&ls, "/opt/x/c"), FileRead::Missing, "opaque dir hides lower contents");
        assert_eq!(find(&ls, "/opt/x/d"), FileRead::Text("d".into()), "opaque dir keeps its own layer");
        assert_eq!(find(&ls, "/etc"), FileRead::NotAFile);
    }

    #[test]
    fn links_resolve_inside_the_root() {
        let l0 = layer(&[("usr/lib/d.json", F, "{}"), ("etc", L, "usr/lib"), ("abs", L, "/usr/lib/d.json"), ("hard", H, "usr/lib/d.json")]);
        let l1 = layer(&[("up", L, "../../etc/passwd"), ("loop", L, "loop"), ("dir", D, "")]);
        let ls = [l0, l1];
        assert_eq!(find(&ls, "/etc/d.json"), FileRead::Text("{}".into()), "symlinked ancestor");
        assert_eq!(find(&ls, "/abs"), FileRead::Text("{}".into()));
        assert_eq!(find(&ls, "/hard"), FileRead::Text("{}".into()));
        assert_eq!(find(&ls, "/up"), FileRead::Escape("../../etc/passwd".into()));
        assert_eq!(find(&ls, "/loop"), FileRead::TooManyLinks);
        assert_eq!(find(&ls, "/dir"), FileRead::NotAFile);
    }

    #[test]
    fn compressed_layers_and_limits() {
        use std::io::Write;
        let plain = layer(&[("a", F, "gz")]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        let zst = zstd::encode_all(&layer(&[("b", F, "zst")])[..], 1).unwrap();
        let ls = [gz, zst];
        assert_eq!(find(&ls, "/a"), FileRead::Text("gz".into()));
        assert_eq!(find(&ls, "/b"), FileRead::Text("zst".into()));
        let big = "x".repeat(MAX_FILE_BYTES as usize + 1);
        assert_eq!(find(&[layer(&[("big", F, &big)])], "/big"), FileRead::TooLarge(MAX_FILE_BYTES + 1));
        assert!(find_files(1, |_| Ok(Box::new(&b"not a tar at all, truncated"[..]) as Box<dyn Read>), &["/x".into()]).is_err());
    }
}
