//! Stable codes of the image pass: rows of the catalogue (`crate::diag::catalogue`).

pub use crate::diag::catalogue::image::*;
