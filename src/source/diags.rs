//! Stable codes of the descriptor sources: rows of the catalogue (`crate::diag::catalogue`).

pub use crate::diag::catalogue::source::*;
