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
