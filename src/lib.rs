//! clawc — a compile-time configuration compiler for Clawdapus agent pods.
//!
//! A pod (`claw-pod.yml`, Compose with `x-claw` extensions) and the self-descriptions of
//! its services go in; deterministic per-agent artifacts come out (`tools.json`,
//! `feeds.json`, `memory.json`, `CLAWDAPUS.md`, `report.json`). The passes:
//!
//! | pass | module | does |
//! |---|---|---|
//! | parse | [`yaml`], [`pod`] | YAML with spans → typed pod |
//! | expand | [`pod`] | `*-defaults`, `...` spread, `${VAR}`, `count` |
//! | describe | [`source`], [`describe`] | descriptor bytes → validated descriptors |
//! | register | [`registry`] | feeds, tools, memory by service |
//! | grant | [`grant`] | deny-by-default grants with provenance, auth |
//! | project | [`project`], [`output`] | artifacts, byte-exact JSON |
//!
//! Only [`compile`] (reading) and [`output::write`] (writing) touch the file system.

// Diagnostics are the error payload of every pass; they are built rarely and carry their
// location and help inline, so boxing them would only add noise.
#![allow(clippy::result_large_err)]

pub(crate) mod access;
#[doc(hidden)]
pub mod allocator;
pub(crate) mod artifact;
pub(crate) mod compat;
pub(crate) mod compile;
pub(crate) mod config;
pub(crate) mod describe;
pub mod diag;
pub(crate) mod digest;
pub(crate) mod disk;
#[doc(hidden)]
pub mod fuzzing;
#[cfg(test)]
pub(crate) mod generated_doc;
pub(crate) mod grant;
pub(crate) mod image;
pub(crate) mod inspect;
pub(crate) mod jobs;
pub(crate) mod lock;
pub mod merge;
pub(crate) mod origin;
pub mod output;
pub(crate) mod pod;
pub(crate) mod project;
pub(crate) mod registry;
pub(crate) mod runner;
pub(crate) mod runs;
pub(crate) mod secrets;
pub(crate) mod skill;
pub(crate) mod source;
pub(crate) mod sourcemap;
#[cfg(target_os = "linux")]
pub(crate) mod watch;
pub(crate) mod yaml;

pub mod cli;

pub use compile::{Compiled, Kept, Options, compile, compile_into};
pub use describe::Decoded;
pub use grant::SecretMode;
pub use project::index::KeptIndex;
pub use source::kept::{InputWatch, KeptReads};
pub use yaml::kept::KeptTree;
