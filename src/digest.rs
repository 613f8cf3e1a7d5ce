//! Content digests: SHA-256 in lower-case hex, as the lock and the image cache name
//! content; and the binding digest (BLAKE3), for what only binds a file of the user cache
//! to what it was made from. A leaf every layer may use.

use sha2::{Digest, Sha256};

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha256(bytes))
}

/// The SHA-256 of `bytes`, as its 32 bytes.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// `digest` as 64 lower-case hex digits written into `buf`, without allocating.
pub(crate) fn hex_into<'b>(digest: &[u8; 32], buf: &'b mut [u8; 64]) -> &'b str {
    hex::encode_to_slice(digest, buf).expect("64 digits for 32 bytes");
    std::str::from_utf8(buf).expect("hex digits are ASCII")
}

/// The 32 bytes of a SHA-256 written as 64 lower-case hex digits (as clawc writes them);
/// `None` for anything else. Decoded here, not by `hex` (which accepts upper case, so the
/// digits were checked first): a recompile decodes every hash of the previous lock, and
/// this takes 0.5 ms for the 9,301 of the 3,000-agent pod where that took 2.2 ms.
pub(crate) fn from_hex(hex: &str) -> Option<[u8; 32]> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let hex: &[u8; 64] = hex.as_bytes().try_into().ok()?;
    let mut b = [0; 32];
    for (byte, pair) in b.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(b)
}

/// The digest that binds a file of the user cache to what it was made from: a lock's
/// bytes (the stat record and the render memo are bound to the lock they were stored
/// with), a render key, a descriptor's text. BLAKE3, not SHA-256: these digests are
/// never written into the tree nor compared with one another tool made, only with what
/// this clawc made on this machine, and a compile takes several megabytes of them (the
/// lock it writes and the one it reads back are 1.4 MB each at 3,000 agent ids), which
/// BLAKE3 digests 3.6 times as fast here (docs/performance.md, thirtieth sitting). It
/// is as collision-resistant as SHA-256 for what the cache needs: a committed tree made
/// to collide with a record would have to break it.
pub(crate) fn binding(bytes: &[u8]) -> [u8; 32] {
    blake3::hash(bytes).into()
}

/// [`binding`] of `parts` one after the other, without joining them in a copy.
pub(crate) fn binding_of(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// The binding digest (see [`binding`]) of what `value`'s `Hash` feeds (see [`Feed`]).
pub(crate) fn of_hash(value: &impl std::hash::Hash) -> [u8; 32] {
    let mut h = Feed::default();
    value.hash(&mut h);
    h.digest()
}

/// A [`Hasher`](std::hash::Hasher) whose result is the binding digest ([`binding`]) of
/// everything `Hash` fed it: collected, and digested whenever [`FEED_PART`] is (the
/// derived `Hash` writes many small pieces, and each update of the hash costs more than
/// a copy), so it never holds much more than that.
/// `Hash` of the standard collections and of `str` frames lengths and ends, so no two
/// sequences of parts digest alike. For digests compared on this machine by this build
/// (the render keys): the bytes a `usize` writes are the machine's own.
#[derive(Default)]
pub(crate) struct Feed {
    part: Vec<u8>,
    hash: blake3::Hasher,
}

/// How much a [`Feed`] collects before it digests it: large enough for BLAKE3 to digest
/// several of its 1 KiB chunks at once.
const FEED_PART: usize = 64 << 10;

impl Feed {
    /// Feeds `b`, its length first.
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        std::hash::Hasher::write_usize(self, b.len());
        std::hash::Hasher::write(self, b);
    }

    pub(crate) fn digest(mut self) -> [u8; 32] {
        self.hash.update(&self.part);
        self.hash.finalize().into()
    }
}

impl std::hash::Hasher for Feed {
    fn write(&mut self, bytes: &[u8]) {
        self.part.extend_from_slice(bytes);
        if self.part.len() >= FEED_PART {
            self.hash.update(&self.part);
            self.part.clear();
        }
    }

    /// Not used: the result is [`Feed::digest`].
    fn finish(&self) -> u64 {
        0
    }
}

/// A hash of 32 bytes that [`Hashing`] can take what passes through it with.
pub(crate) trait Hash32 {
    fn update(&mut self, b: &[u8]);
    fn finish32(self) -> [u8; 32];
}

impl Hash32 for Sha256 {
    fn update(&mut self, b: &[u8]) {
        Digest::update(self, b);
    }

    fn finish32(self) -> [u8; 32] {
        self.finalize().into()
    }
}

impl Hash32 for blake3::Hasher {
    fn update(&mut self, b: &[u8]) {
        blake3::Hasher::update(self, b);
    }

    fn finish32(self) -> [u8; 32] {
        self.finalize().into()
    }
}

/// A reader or writer that hashes and counts what passes through it (SHA-256, or the
/// binding digest: [`Hashing::binding`]): a file's digest taken as it is parsed or
/// written, not from a copy of its bytes.
pub(crate) struct Hashing<R, H = Sha256> {
    inner: R,
    hash: H,
    len: u64,
}

impl<R> Hashing<R> {
    pub(crate) fn new(inner: R) -> Self {
        Hashing { inner, hash: Sha256::new(), len: 0 }
    }
}

/// The hash of the binding digest ([`binding`]), as [`Hashing`] takes it.
pub(crate) type Binding = blake3::Hasher;

impl<R> Hashing<R, Binding> {
    /// One that takes the binding digest ([`binding`]).
    pub(crate) fn binding(inner: R) -> Self {
        Hashing { inner, hash: blake3::Hasher::new(), len: 0 }
    }
}

impl<R, H: Hash32> Hashing<R, H> {
    /// The digest of what was read, and how many bytes it was.
    pub(crate) fn finish(self) -> ([u8; 32], u64) {
        (self.hash.finish32(), self.len)
    }
}

impl<R: std::io::Read, H: Hash32> std::io::Read for Hashing<R, H> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(b)?;
        self.hash.update(&b[..n]);
        self.len += n as u64;
        Ok(n)
    }
}

/// Each update of the hash costs more than a copy: a writer of small pieces goes through
/// a buffer first.
impl<W: std::io::Write, H: Hash32> std::io::Write for Hashing<W, H> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(b)?;
        self.hash.update(&b[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_hex_clawc_writes_is_a_digest() {
        let d = sha256(b"x");
        assert_eq!(from_hex(&sha256_hex(b"x")), Some(d));
        assert_eq!(hex_into(&d, &mut [0; 64]), sha256_hex(b"x"));
        for not in [
            sha256_hex(b"x").to_uppercase(),
            sha256_hex(b"x")[1..].to_string(),
            format!("{} ", sha256_hex(b"x")),
            String::new(),
            "g".repeat(64),
            format!("{}é", &sha256_hex(b"x")[..62]),
        ] {
            assert_eq!(from_hex(&not), None, "{not:?}");
        }
    }

    #[test]
    fn a_feed_digests_what_it_was_fed_whatever_the_parts() {
        use std::hash::Hasher;
        // Pieces small and large, across the part's bound, against the bytes whole.
        let pieces: Vec<Vec<u8>> = (0..200u32).map(|i| vec![i as u8; (i as usize * 997) % (3 * FEED_PART / 2)]).collect();
        let mut feed = Feed::default();
        for p in &pieces {
            feed.write(p);
        }
        assert_eq!(feed.digest(), binding(&pieces.concat()));
        assert_eq!(binding_of(&[b"ab", b"c"]), binding(b"abc"));
        assert_ne!(binding(b"abc"), sha256(b"abc"), "not SHA-256");
        let mut w = Hashing::binding(Vec::new());
        std::io::Write::write_all(&mut w, b"abc").unwrap();
        assert_eq!(w.finish(), (binding(b"abc"), 3));
    }
}
