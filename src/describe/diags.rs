//! Stable codes of the describe pass: rows of the catalogue (`crate::diag::catalogue`).

pub(crate) use crate::diag::catalogue::describe::*;
