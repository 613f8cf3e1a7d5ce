//! Writing the compiled tree into `--out` as one transaction, and comparing it with the
//! tree on disk (`--check`).

pub(crate) mod ahead;
pub mod check;
#[cfg(target_os = "linux")]
pub mod idle;
pub(crate) mod known;
pub(crate) mod memo;
pub(crate) mod outputs;
pub(crate) mod record;
pub(crate) mod sink;
pub mod write;
