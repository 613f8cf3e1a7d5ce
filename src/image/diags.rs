//! Stable codes of the image pass: rows of the catalogue (`crate::diag::catalogue`).

pub(crate) use crate::diag::catalogue::image::*;
