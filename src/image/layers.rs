//! Finding files in an image's layer stack without extracting it: layers are read as
//! tar streams (gzip, zstd or plain, told apart by their magic bytes), whiteouts and
//! opaque directories are honoured, and symlinks and hardlinks are followed inside the
//! image root. A link that climbs above `/` is refused rather than clamped, so a label
//! can never make clawc read something the image author did not put at that path.
//!
//! Layers come from whoever built the image, so reading them is bounded: each layer and
//! the whole image may inflate to a limited number of bytes ([`Limits`]), and the layers
//! are streamed at most twice however many links a lookup follows (every link is indexed
//! on the first pass; a second pass reads only files that link chains end at).
//!
//! The first pass also keeps, from the tar headers alone, what tells the image's
//! executables (the entries of its `PATH` directories and every executable file, as a
//! link may end at one anywhere); [`super::executables`] makes the list from them.

use super::FileRead;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};

/// Largest file read out of an image (descriptors, snapshots, skills).
pub(crate) const MAX_FILE_BYTES: u64 = crate::disk::MAX_INPUT_BYTES;

/// How many links one lookup may follow (Linux uses 40 as well).
pub(crate) const MAX_HOPS: usize = 40;

/// Largest GNU long-name or long-link entry, or PAX extension header, in a layer. The
/// tar crate buffers such an entry whole, so without this a layer could make it allocate
/// gigabytes; real ones hold a path or a few attributes.
const MAX_EXTENSION_BYTES: u64 = 1 << 20;

/// How much reading one image may cost.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Bytes one layer may inflate to (its uncompressed tar stream).
    pub layer_bytes: u64,
    /// Bytes all layers of the image may inflate to, together.
    pub image_bytes: u64,
    /// Links, whiteouts and opaque markers indexed for one image.
    pub indexed: usize,
    /// Bytes the entries kept to tell executables may take (their paths, counted twice,
    /// plus 64 a node); past it no more are kept, and the list is what the kept ones say.
    pub exec_bytes: usize,
    /// Bytes of paths looked up while telling executables; past it the list stops.
    pub exec_work: u64,
    /// Names in the list of executables: the first ones in sorted order are kept.
    pub executables: usize,
}

impl Limits {
    /// 8 GiB per layer and 32 GiB per image hold the largest real images (CUDA and ML
    /// stacks) and stop a decompression bomb (a few MB of zstd that inflate to 64 GiB)
    /// after seconds. One million index entries is far more links than a distribution
    /// ships, and a few hundred MB at most. 64 MiB of kept entries is some 200,000
    /// executable files, several times what a CUDA or ML image has; 64 MiB of lookups is
    /// a second at worst; 100,000 names is more than any real `PATH` holds.
    pub(crate) const DEFAULT: Limits = Limits {
        layer_bytes: 8 << 30,
        image_bytes: 32 << 30,
        indexed: 1_000_000,
        exec_bytes: 64 << 20,
        exec_work: 64 << 20,
        executables: 100_000,
    };
}

/// Linux's `PATH_MAX`: no longer path can be opened or run, so none is looked up, nor kept
/// for executables.
pub(crate) const PATH_MAX: usize = 4096;

/// What one layer says about one path.
#[derive(Clone, Debug)]
pub(super) enum Node {
    /// A file (what reading it gave, or a placeholder when it was not read), and whether
    /// it is a regular file with an execute bit set.
    File(FileRead, bool),
    Dir,
    Symlink(String),
    Hardlink(String),
}

/// What the layers say about the paths looked for (and their ancestors).
#[derive(Default)]
pub(super) struct Layer {
    pub(super) nodes: BTreeMap<String, Node>,
    /// Paths deleted from lower layers by `.wh.<name>`.
    pub(super) whiteouts: BTreeSet<String>,
    /// Directories whose lower-layer contents are hidden by `.wh..wh..opq`.
    pub(super) opaque: BTreeSet<String>,
}

/// An error reading a layer.
#[derive(Debug)]
pub enum LayerError {
    /// The layer's bytes are not a readable tar stream (or its blob could not be opened).
    Unreadable(String),
    /// The layer or the image is over a [`Limits`] bound.
    TooLarge(String),
}

/// Normalises an absolute image path: `/a/./b//c/` → `/a/b/c`. `..` is kept out by the
/// caller ([`resolve_link`]); here it simply cannot climb above `/`.
pub(crate) fn normalize(path: &str) -> String {
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
pub(crate) fn ancestors(path: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    (1..parts.len()).map(|n| format!("/{}", parts[..n].join("/"))).collect()
}

/// Whether `anc` is one of [`ancestors`] of `path` (both normalised).
fn is_strict_ancestor(anc: &str, path: &str) -> bool {
    anc != "/" && path.len() > anc.len() && path.starts_with(anc) && path.as_bytes()[anc.len()] == b'/'
}

/// Opens a layer blob, whatever its compression.
pub(crate) fn decompress<'a>(reader: impl Read + 'a) -> std::io::Result<Box<dyn Read + 'a>> {
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

/// The state of one pass over an image's layers (bottom first).
struct Pass<'l> {
    limits: &'l Limits,
    /// Paths whose contents are read.
    wanted: &'l BTreeSet<String>,
    /// `wanted` and their ancestors: recorded whatever they are.
    interesting: BTreeSet<String>,
    /// Every path some layer so far made a link. Entries at these paths in upper layers
    /// are recorded too, so whether a path is a link is always known exactly.
    links: BTreeSet<String>,
    indexed: usize,
    /// The `PATH` directories, when executables are told on this pass.
    path_dirs: Option<&'l BTreeSet<String>>,
    /// Executable files kept outside the `PATH` directories. As with `links`, an entry at
    /// one of these in an upper layer is kept too (`chmod -x` makes a new entry), so
    /// whether a link target is still executable is known exactly.
    execs: BTreeSet<String>,
    /// What [`Limits::exec_bytes`] leaves; 0 once an entry did not fit.
    exec_left: usize,
}

/// The inflated bytes one pass may still read, shared by its layers' [`Metered`] streams.
struct Meter {
    image_left: Cell<u64>,
    /// Which bound a read hit.
    tripped: Cell<Option<Bound>>,
}

#[derive(Clone, Copy)]
enum Bound {
    Layer,
    Image,
    Extension,
}

/// Watches a layer's tar headers as they stream past, to refuse an extension entry over
/// [`MAX_EXTENSION_BYTES`] before the tar crate buffers it. It follows the stream's
/// layout as the tar crate reads it (a header, GNU sparse extension blocks, data padded
/// to 512 bytes; a PAX `size` record sizes the next entry); should it lose step (a
/// header whose checksum does not match), it stops watching and leaves the verdict on
/// the stream to the tar reader.
struct HeaderGuard<'m, R> {
    inner: R,
    meter: &'m Meter,
    /// Bytes passed so far.
    pos: u64,
    /// Where the next header (or sparse extension) block starts; `None`: not watching.
    next: Option<u64>,
    /// The block being assembled.
    block: Vec<u8>,
    /// Inside GNU sparse extension blocks: the entry's data size.
    sparse: Option<u64>,
    /// A PAX header's data being collected: its end offset and bytes.
    pax: Option<(u64, Vec<u8>)>,
    /// A PAX `size` record, for the next entry that is not an extension.
    size_override: Option<u64>,
}

impl<'m, R: Read> HeaderGuard<'m, R> {
    fn new(inner: R, meter: &'m Meter) -> Self {
        HeaderGuard { inner, meter, pos: 0, next: Some(0), block: Vec::with_capacity(512), sparse: None, pax: None, size_override: None }
    }

    fn watch(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let mut i = 0;
        while let Some(next) = self.next.filter(|_| i < bytes.len()) {
            let at = self.pos + i as u64;
            if at < next {
                let n = (next - at).min((bytes.len() - i) as u64) as usize;
                if let Some((end, data)) = &mut self.pax {
                    let keep = (*end).saturating_sub(at).min(n as u64) as usize;
                    data.extend_from_slice(&bytes[i..i + keep]);
                }
                i += n;
                continue;
            }
            let n = (512 - self.block.len()).min(bytes.len() - i);
            self.block.extend_from_slice(&bytes[i..i + n]);
            i += n;
            if self.block.len() == 512 {
                let end = self.pos + i as u64;
                self.header(end)?;
                self.block.clear();
            }
        }
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// A complete block ending at `end`: a header, or a GNU sparse extension block.
    fn header(&mut self, end: u64) -> std::io::Result<()> {
        let padded = |size: u64| end.saturating_add(size.div_ceil(512).saturating_mul(512));
        if let Some(size) = self.sparse {
            // `isextended` is the byte after 21 sparse records of 24 bytes.
            let more = self.block[504] == 1;
            self.next = Some(if more { end } else { padded(size) });
            self.sparse = self.sparse.filter(|_| more);
            return Ok(());
        }
        if let Some((_, data)) = self.pax.take() {
            self.size_override = pax_size(&data);
        }
        let header = tar::Header::from_byte_slice(&self.block);
        // An all-zero block ends the archive (the tar reader stops there); a bad
        // checksum means the layout was not what it seemed: stop watching either way.
        if self.block.iter().all(|&b| b == 0) || header.cksum().ok() != Some(checksum(&self.block)) {
            self.next = None;
            return Ok(());
        }
        let Ok(mut size) = header.entry_size() else {
            self.next = None;
            return Ok(());
        };
        let kind = header.entry_type();
        let extension = kind.is_gnu_longname() || kind.is_gnu_longlink() || kind.is_pax_local_extensions();
        if extension && size > MAX_EXTENSION_BYTES {
            self.meter.tripped.set(Some(Bound::Extension));
            return Err(std::io::Error::other("tar extension entry over the limit"));
        }
        if !extension {
            size = self.size_override.take().unwrap_or(size);
        }
        if kind.is_pax_local_extensions() {
            self.pax = Some((end + size, Vec::new()));
        }
        if kind.is_gnu_sparse() && header.as_gnu().is_some_and(tar::GnuHeader::is_extended) {
            self.sparse = Some(size);
            self.next = Some(end);
        } else {
            self.next = Some(padded(size));
        }
        Ok(())
    }
}

impl<R: Read> Read for HeaderGuard<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.watch(&buf[..n])?;
        Ok(n)
    }
}

/// A tar header's checksum: the sum of its bytes, the checksum field read as spaces.
fn checksum(block: &[u8]) -> u32 {
    block.iter().enumerate().map(|(i, &b)| if (148..156).contains(&i) { u32::from(b' ') } else { u32::from(b) }).sum()
}

/// The first PAX `size` record, as the tar crate reads it.
fn pax_size(data: &[u8]) -> Option<u64> {
    let first = tar::PaxExtensions::new(data).map_while(Result::ok).find(|e| e.key() == Ok("size"))?;
    first.value().ok()?.parse().ok()
}

fn size(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) { format!("{} GiB", bytes >> 30) } else { format!("{bytes} bytes") }
}

impl<'l> Pass<'l> {
    fn new(limits: &'l Limits, wanted: &'l BTreeSet<String>, path_dirs: Option<&'l BTreeSet<String>>) -> Self {
        let interesting = wanted.iter().flat_map(|w| ancestors(w).into_iter().chain([w.clone()])).collect();
        Pass {
            limits,
            wanted,
            interesting,
            links: BTreeSet::new(),
            indexed: 0,
            path_dirs,
            execs: BTreeSet::new(),
            exec_left: limits.exec_bytes,
        }
    }

    /// Whether the entry at `path` (in `dir`) is kept to tell executables: an entry of a
    /// `PATH` directory whatever it is (an upper layer's may hide a lower one), an
    /// executable file anywhere (a link may end at it), or an entry where one was. Counts
    /// it against [`Limits::exec_bytes`]; once one does not fit, no more are kept, so what
    /// is kept depends on the layers alone.
    fn keep_for_executables(&mut self, path: &str, dir: &str, executable: bool) -> bool {
        let Some(dirs) = self.path_dirs else { return false };
        if path.len() > PATH_MAX {
            return false;
        }
        let in_path_dir = dirs.contains(dir);
        let outside = !in_path_dir && (executable || self.execs.contains(path));
        if !in_path_dir && !outside {
            return false;
        }
        let cost = 2 * path.len() + 64;
        if cost > self.exec_left {
            self.exec_left = 0;
            return false;
        }
        self.exec_left -= cost;
        if outside {
            self.execs.insert(path.to_string());
        }
        true
    }

    /// Counts an index entry that is not one of the interesting paths.
    fn charge(&mut self) -> Result<(), LayerError> {
        self.indexed += 1;
        if self.indexed > self.limits.indexed {
            let n = self.limits.indexed;
            return Err(LayerError::TooLarge(format!("the image has more than {n} links and whiteouts")));
        }
        Ok(())
    }

    /// Indexes one layer: what it says about the interesting paths and about links.
    fn layer(&mut self, meter: &Meter, reader: impl Read) -> Result<Layer, LayerError> {
        let reader = decompress(reader).map_err(|e| LayerError::Unreadable(e.to_string()))?;
        let metered = Metered { inner: reader, layer_left: self.limits.layer_bytes, meter };
        let mut archive = tar::Archive::new(HeaderGuard::new(metered, meter));
        let result = self.entries(&mut archive);
        match (result, meter.tripped.get()) {
            (Err(_), Some(Bound::Layer)) => {
                Err(LayerError::TooLarge(format!("a layer inflates to more than {} (the per-layer limit)", size(self.limits.layer_bytes))))
            }
            (Err(_), Some(Bound::Image)) => Err(LayerError::TooLarge(format!(
                "the image's layers inflate to more than {} (the per-image limit)",
                size(self.limits.image_bytes)
            ))),
            (Err(_), Some(Bound::Extension)) => Err(LayerError::TooLarge(format!(
                "a layer has a tar long name, long link or PAX header over {}",
                size(MAX_EXTENSION_BYTES)
            ))),
            (r, _) => r,
        }
    }

    fn entries(&mut self, archive: &mut tar::Archive<impl Read>) -> Result<Layer, LayerError> {
        let unreadable = |e: std::io::Error| LayerError::Unreadable(e.to_string());
        let mut layer = Layer::default();
        for entry in archive.entries().map_err(unreadable)? {
            let mut entry = entry.map_err(unreadable)?;
            let path = normalize(&String::from_utf8_lossy(&entry.path_bytes()));
            // Tars may leave parent directories implicit: an entry proves its parents exist.
            // Each interesting path is tested as a prefix rather than every ancestor built:
            // a deep path's ancestors are quadratic in its length (a 1 MiB long name's
            // would be hundreds of GB), the interesting paths a handful.
            for anc in self.interesting.iter().filter(|a| is_strict_ancestor(a, &path)) {
                layer.nodes.entry(anc.clone()).or_insert(Node::Dir);
            }
            let (dir, base) = path.rsplit_once('/').unwrap_or(("", &path));
            let dir = if dir.is_empty() { "/".to_string() } else { dir.to_string() };
            if base == ".wh..wh..opq" {
                self.charge()?;
                layer.opaque.insert(dir);
                continue;
            }
            if let Some(name) = base.strip_prefix(".wh.") {
                self.charge()?;
                layer.whiteouts.insert(normalize(&format!("{dir}/{name}")));
                continue;
            }
            let kind = entry.header().entry_type();
            let is_link = matches!(kind, tar::EntryType::Symlink | tar::EntryType::Link);
            // Any execute bit, as `execve` wants; the mode is in the header, nothing is read.
            let is_file = matches!(kind, tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse);
            let executable = is_file && entry.header().mode().is_ok_and(|m| m & 0o111 != 0);
            if !self.interesting.contains(&path) {
                if is_link || self.links.contains(&path) {
                    self.charge()?;
                } else if !self.keep_for_executables(&path, &dir, executable) {
                    continue;
                }
            }
            let link = || entry.link_name_bytes().map(|l| String::from_utf8_lossy(&l).into_owned()).unwrap_or_default();
            let node = match kind {
                tar::EntryType::Directory => Node::Dir,
                tar::EntryType::Symlink => Node::Symlink(link()),
                tar::EntryType::Link => Node::Hardlink(link()),
                tar::EntryType::Regular | tar::EntryType::Continuous => {
                    if self.wanted.contains(&path) {
                        let size = entry.header().size().map_err(unreadable)?;
                        Node::File(read_entry(&mut entry, size).map_err(unreadable)?, executable)
                    } else {
                        // A placeholder: resolution reads it in a second pass if it must.
                        Node::File(FileRead::Missing, executable)
                    }
                }
                _ => Node::File(FileRead::NotAFile, executable),
            };
            if is_link {
                self.links.insert(path.clone());
            }
            layer.nodes.insert(path, node);
        }
        Ok(layer)
    }
}

/// A layer's inflated stream, failing once it passes the layer's or the image's bound.
struct Metered<'m, R> {
    inner: R,
    layer_left: u64,
    meter: &'m Meter,
}

impl<R: Read> Read for Metered<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let got = n as u64;
        let over = if got > self.layer_left {
            Some(Bound::Layer)
        } else if got > self.meter.image_left.get() {
            Some(Bound::Image)
        } else {
            None
        };
        if let Some(bound) = over {
            self.meter.tripped.set(Some(bound));
            return Err(std::io::Error::other("inflated past a limit"));
        }
        self.layer_left -= got;
        self.meter.image_left.set(self.meter.image_left.get() - got);
        Ok(n)
    }
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
        // By ancestor rather than by scanning the markers: a layer may hold a million.
        let above = ancestors(path);
        let deleted = layer.whiteouts.contains(path) || above.iter().any(|a| layer.whiteouts.contains(a));
        let hidden = layer.opaque.contains("/") || above.iter().any(|a| layer.opaque.contains(a));
        if deleted || hidden {
            return None;
        }
    }
    None
}

enum Outcome {
    Done(FileRead),
    /// The chain ends at a path whose contents were not read: read it in a second pass.
    Need(String),
}

/// Follows `start` through the indexed layers (bottom first) to a file. Whether a path
/// is a link is known for every path after the first pass, so the chain is followed to
/// its end whatever was wanted; only the end may need reading.
fn resolve(layers: &[Layer], wanted: &BTreeSet<String>, start: &str) -> Outcome {
    let mut path = normalize(start);
    let mut hops = 0;
    'restart: loop {
        if hops > MAX_HOPS {
            return Outcome::Done(FileRead::TooManyLinks);
        }
        // No longer path can be opened (ENAMETOOLONG); looking one up ancestor by ancestor
        // would be quadratic in its length, for a label that names a megabyte-long path.
        if path.len() > PATH_MAX {
            return Outcome::Done(FileRead::Missing);
        }
        for anc in ancestors(&path) {
            match lookup(layers, &anc) {
                Some(Node::Symlink(t)) => {
                    hops += 1;
                    let Some(base) = resolve_link(&anc, t) else { return Outcome::Done(FileRead::Escape(t.clone())) };
                    path = normalize(&format!("{base}/{}", &path[anc.len()..]));
                    continue 'restart;
                }
                Some(Node::File(..) | Node::Hardlink(_)) => return Outcome::Done(FileRead::Missing),
                Some(Node::Dir) | None => {}
            }
        }
        let node = lookup(layers, &path);
        let next = match node {
            // A hardlink names its target from the root of the image, not from its directory.
            Some(Node::Hardlink(t)) => resolve_link("/", t).ok_or(t),
            Some(Node::Symlink(t)) => resolve_link(&path, t).ok_or(t),
            _ if !wanted.contains(&path) => return Outcome::Need(path),
            None => return Outcome::Done(FileRead::Missing),
            Some(Node::Dir) => return Outcome::Done(FileRead::NotAFile),
            Some(Node::File(r, _)) => return Outcome::Done(r.clone()),
        };
        hops += 1;
        match next {
            Ok(p) => path = p,
            Err(t) => return Outcome::Done(FileRead::Escape(t.clone())),
        }
    }
}

/// What one read of an image's layers gave.
#[derive(Debug, Default)]
pub(crate) struct Extracted {
    /// Each path asked for → what reading it gave.
    pub files: BTreeMap<String, FileRead>,
    /// The names of the executables in the `PATH` directories given, `None` when none
    /// were given (not asked for).
    pub executables: Option<BTreeSet<String>>,
}

/// Reads `paths` from an image of `count` layers (bottom first), opened by `open`,
/// within [`Limits::DEFAULT`].
pub fn find_files<'a>(
    count: usize,
    open: impl FnMut(usize) -> Result<Box<dyn Read + 'a>, LayerError>,
    paths: &[String],
) -> Result<BTreeMap<String, FileRead>, LayerError> {
    Ok(read_layers(&Limits::DEFAULT, count, open, paths, None)?.files)
}

/// [`find_files`] within `limits`.
#[cfg(test)]
pub(crate) fn find_files_within<'a>(
    limits: &Limits,
    count: usize,
    open: impl FnMut(usize) -> Result<Box<dyn Read + 'a>, LayerError>,
    paths: &[String],
) -> Result<BTreeMap<String, FileRead>, LayerError> {
    Ok(read_layers(limits, count, open, paths, None)?.files)
}

/// Reads `paths` from an image of `count` layers, and with `path_dirs` (the image's
/// `PATH` directories, absolute and normalised) the names of its executables. The layers
/// are streamed once, and once more only when a link chain ends at a file that was not
/// asked for by name; the executables come from the first pass, from tar headers alone.
pub(crate) fn read_layers<'a>(
    limits: &Limits,
    count: usize,
    mut open: impl FnMut(usize) -> Result<Box<dyn Read + 'a>, LayerError>,
    paths: &[String],
    path_dirs: Option<&[String]>,
) -> Result<Extracted, LayerError> {
    // A path no file system could open is missing, decided here: its ancestors (which the
    // pass indexes) would take memory quadratic in its length.
    let mut wanted: BTreeSet<String> = paths.iter().map(|p| normalize(p)).filter(|p| p.len() <= PATH_MAX).collect();
    let dir_set: Option<BTreeSet<String>> = path_dirs.map(|d| d.iter().cloned().collect());
    let mut out = Extracted::default();
    for pass_no in 0..2 {
        // The second pass reads link chains' ends only; the first kept all executables need.
        let dirs = if pass_no == 0 { dir_set.as_ref() } else { None };
        let mut pass = Pass::new(limits, &wanted, dirs);
        let meter = Meter { image_left: Cell::new(limits.image_bytes), tripped: Cell::new(None) };
        let layers = (0..count).map(|i| pass.layer(&meter, open(i)?)).collect::<Result<Vec<_>, _>>()?;
        let mut more = BTreeSet::new();
        for p in paths {
            match resolve(&layers, &wanted, p) {
                Outcome::Done(r) => {
                    out.files.insert(p.clone(), r);
                }
                Outcome::Need(n) => {
                    more.insert(n);
                }
            }
        }
        if let Some(path_dirs) = path_dirs.filter(|_| dirs.is_some()) {
            out.executables = Some(super::executables::collect(layers, path_dirs, limits));
        }
        if more.is_empty() {
            return Ok(out);
        }
        wanted.extend(more);
    }
    // The second pass read every chain's end; nothing is left unresolved, but should a
    // chain still end unread, it is reported rather than looped on.
    out.files = paths.iter().map(|p| (p.clone(), out.files.remove(p).unwrap_or(FileRead::TooManyLinks))).collect();
    Ok(out)
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
    fn a_path_longer_than_path_max_is_missing_without_a_walk() {
        let deep = format!("/{}", vec!["d"; 200_000].join("/"));
        let start = std::time::Instant::now();
        assert_eq!(find(&[layer(&[("a", tar::EntryType::Regular, "x")])], &deep), FileRead::Missing);
        assert!(start.elapsed() < std::time::Duration::from_secs(5), "{:?}", start.elapsed());
    }

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

    #[test]
    fn hardlinks_climbing_above_the_root_are_refused_not_clamped() {
        let l0 = layer(&[("x.json", F, "{}"), ("opt/d/hl", H, "../../../../x.json"), ("ok", H, "x.json")]);
        let ls = [l0];
        assert_eq!(find(&ls, "/opt/d/hl"), FileRead::Escape("../../../../x.json".into()));
        assert_eq!(find(&ls, "/ok"), FileRead::Text("{}".into()));
    }

    #[test]
    fn link_chains_stream_the_layers_at_most_twice() {
        // /l0 → /l1 → … → /l6 → /d.json, each link in its own layer, the file at the bottom.
        let mut ls = vec![layer(&[("d.json", F, "{}")])];
        for i in 0..7 {
            let next = if i == 6 { "d.json".to_string() } else { format!("l{}", i + 1) };
            ls.push(layer(&[(&format!("l{i}"), L, &next)]));
        }
        let opened = Cell::new(0);
        let open = |i: usize| {
            opened.set(opened.get() + 1);
            Ok(Box::new(&ls[i][..]) as Box<dyn Read>)
        };
        let r = find_files(ls.len(), open, &["/l0".to_string()]).unwrap();
        assert_eq!(r["/l0"], FileRead::Text("{}".into()));
        assert_eq!(opened.get(), 2 * ls.len(), "one pass to index, one to read the end of the chain");
    }

    #[test]
    fn inflating_past_the_limits_is_an_error() {
        // A small zstd layer holding a large file of zeros: a decompression bomb in miniature.
        let zeros = "\0".repeat(1 << 20);
        let bomb = zstd::encode_all(&layer(&[("big", F, &zeros)])[..], 3).unwrap();
        assert!(bomb.len() < 1 << 12);
        let limits = Limits { layer_bytes: 1 << 16, image_bytes: 1 << 30, indexed: 100, ..Limits::DEFAULT };
        let err = find_files_within(&limits, 1, |_| Ok(Box::new(&bomb[..]) as Box<dyn Read>), &["/x".into()]).unwrap_err();
        assert!(matches!(&err, LayerError::TooLarge(m) if m.contains("per-layer limit")), "{err:?}");
        // Each of four layers is under the per-layer limit; together they are over the image's.
        let small = layer(&[("f", F, &"y".repeat(40_000))]);
        let limits = Limits { layer_bytes: 1 << 16, image_bytes: 1 << 17, indexed: 100, ..Limits::DEFAULT };
        let err = find_files_within(&limits, 4, |_| Ok(Box::new(&small[..]) as Box<dyn Read>), &["/x".into()]).unwrap_err();
        assert!(matches!(&err, LayerError::TooLarge(m) if m.contains("per-image limit")), "{err:?}");
    }

    #[test]
    fn indexing_is_bounded() {
        let many: Vec<(String, tar::EntryType, &str)> = (0..50).map(|i| (format!("l{i}"), L, "t")).collect();
        let entries: Vec<(&str, tar::EntryType, &str)> = many.iter().map(|(p, k, d)| (p.as_str(), *k, *d)).collect();
        let l = layer(&entries);
        let limits = Limits { indexed: 10, ..Limits::DEFAULT };
        let err = find_files_within(&limits, 1, |_| Ok(Box::new(&l[..]) as Box<dyn Read>), &["/x".into()]).unwrap_err();
        assert!(matches!(&err, LayerError::TooLarge(m) if m.contains("more than 10 links")), "{err:?}");
    }

    #[test]
    fn oversized_tar_extension_entries_are_refused_before_they_are_buffered() {
        let mut b = tar::Builder::new(Vec::new());
        // Entries of every layout first, so the guard must keep step to see the bomb.
        let mut h = tar::Header::new_gnu();
        h.set_size(1001);
        b.append_data(&mut h, format!("a/{}", "n".repeat(150)), &vec![b'p'; 1001][..]).unwrap();
        b.append_pax_extensions([("path", "b".repeat(300).as_bytes())]).unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_size(3);
        b.append_data(&mut h, "short", &b"pax"[..]).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::GNULongName);
        h.set_size(2 << 20);
        b.append_data(&mut h, "././@LongLink", &vec![b'a'; 2 << 20][..]).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        b.append_data(&mut h, "x", &b"{}"[..]).unwrap();
        let bomb = b.into_inner().unwrap();
        let err = find_files(1, |_| Ok(Box::new(&bomb[..]) as Box<dyn Read>), &["/x".into()]).unwrap_err();
        assert!(matches!(&err, LayerError::TooLarge(m) if m.contains("over 1048576 bytes")), "{err:?}");
    }

    #[test]
    fn strict_ancestors_by_prefix() {
        for path in ["/a/b/c", "/a", "/", "/ab/c", "/a/bc"] {
            for anc in ["/", "/a", "/a/b", "/a/b/c", "/ab", "/a/bc"] {
                assert_eq!(is_strict_ancestor(anc, path), ancestors(path).iter().any(|a| a == anc), "{anc} of {path}");
            }
        }
    }

    #[test]
    fn deep_paths_cost_time_linear_in_their_length() {
        // 500 entries 32 KiB deep (16,384 components): building every ancestor of each
        // would copy some 130 GB.
        let deep = "d/".repeat(1 << 14);
        let entries: Vec<(String, tar::EntryType, &str)> = (0..500).map(|i| (format!("{deep}f{i}"), F, "")).collect();
        let entries: Vec<(&str, tar::EntryType, &str)> = entries.iter().map(|(p, k, d)| (p.as_str(), *k, *d)).collect();
        let l = layer(&entries);
        let started = std::time::Instant::now();
        assert_eq!(find(&[l], "/d/x.json"), FileRead::Missing);
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    }

    #[test]
    fn long_names_pax_headers_and_padding_still_read() {
        let long = format!("opt/{}/d.json", "n".repeat(150));
        let mut b = tar::Builder::new(Vec::new());
        // A GNU long name (the builder writes one for paths over 100 bytes) …
        let mut h = tar::Header::new_gnu();
        h.set_size(3);
        b.append_data(&mut h, &long, &b"gnu"[..]).unwrap();
        // … a PAX path, and an odd-sized file before them, so padding matters.
        let mut h = tar::Header::new_ustar();
        h.set_size(1001);
        b.append_data(&mut h, "pad", &vec![b'p'; 1001][..]).unwrap();
        let pax_path = format!("srv/{}/e.json", "p".repeat(200));
        b.append_pax_extensions([("path", pax_path.as_bytes())]).unwrap();
        let mut h = tar::Header::new_ustar();
        h.set_size(3);
        b.append_data(&mut h, "short-name", &b"pax"[..]).unwrap();
        let l = b.into_inner().unwrap();
        assert_eq!(find(std::slice::from_ref(&l), &format!("/{long}")), FileRead::Text("gnu".into()));
        assert_eq!(find(std::slice::from_ref(&l), &format!("/{pax_path}")), FileRead::Text("pax".into()));
    }
}
