//! Content digests: SHA-256 in lower-case hex, as the lock and the image cache name
//! content. A leaf every layer may use.

use sha2::{Digest, Sha256};

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha256(bytes))
}

/// The SHA-256 of `bytes`, as its 32 bytes.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The SHA-256 of `parts` one after the other, without joining them in a copy.
pub(crate) fn sha256_of(parts: &[&[u8]]) -> [u8; 32] {
    parts.iter().fold(Sha256::new(), Digest::chain_update).finalize().into()
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

/// SHA-256 of what `value`'s `Hash` feeds (see [`Feed`]).
pub(crate) fn of_hash(value: &impl std::hash::Hash) -> [u8; 32] {
    let mut h = Feed::default();
    value.hash(&mut h);
    h.digest()
}

/// A [`Hasher`](std::hash::Hasher) whose result is the SHA-256 of everything `Hash` fed
/// it (collected, then digested at once: the derived `Hash` writes many small pieces).
/// `Hash` of the standard collections and of `str` frames lengths and ends, so no two
/// sequences of parts digest alike. For digests compared on this machine by this build
/// (the render keys): the bytes a `usize` writes are the machine's own.
#[derive(Default)]
pub(crate) struct Feed(Vec<u8>);

impl Feed {
    /// Feeds `b`, its length first.
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        std::hash::Hasher::write_usize(self, b.len());
        self.0.extend_from_slice(b);
    }

    pub(crate) fn digest(self) -> [u8; 32] {
        sha256(&self.0)
    }
}

impl std::hash::Hasher for Feed {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    /// Not used: the result is [`Feed::digest`].
    fn finish(&self) -> u64 {
        0
    }
}

/// A reader or writer that hashes (SHA-256) and counts what passes through it: a file's
/// digest taken as it is parsed or written, not from a copy of its bytes.
pub(crate) struct Hashing<R> {
    inner: R,
    hash: Sha256,
    len: u64,
}

impl<R> Hashing<R> {
    pub(crate) fn new(inner: R) -> Self {
        Hashing { inner, hash: Sha256::new(), len: 0 }
    }

    /// The digest of what was read, and how many bytes it was.
    pub(crate) fn finish(self) -> ([u8; 32], u64) {
        (self.hash.finalize().into(), self.len)
    }
}

impl<R: std::io::Read> std::io::Read for Hashing<R> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(b)?;
        self.hash.update(&b[..n]);
        self.len += n as u64;
        Ok(n)
    }
}

/// Each update of the hash costs more than a copy: a writer of small pieces goes through
/// a buffer first.
impl<W: std::io::Write> std::io::Write for Hashing<W> {
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
}
