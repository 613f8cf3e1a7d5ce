//! Stable codes of the parse and expand passes: rows of the catalogue (`crate::diag::catalogue`).

pub(crate) use crate::diag::catalogue::pod::*;
