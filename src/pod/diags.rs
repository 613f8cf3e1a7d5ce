//! Stable codes of the parse and expand passes: rows of the catalogue (`crate::diag::catalogue`).

pub use crate::diag::catalogue::pod::*;
