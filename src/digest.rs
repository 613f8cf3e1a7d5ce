//! Content digests: SHA-256 in lower-case hex, as the lock and the image cache name
//! content. A leaf every layer may use.

use sha2::{Digest, Sha256};

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
