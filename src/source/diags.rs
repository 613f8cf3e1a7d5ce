//! Stable codes of the descriptor sources: rows of the catalogue (`crate::diag::catalogue`).

pub(crate) use crate::diag::catalogue::source::*;
