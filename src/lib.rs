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

pub mod access;
pub mod artifact;
pub mod compile;
pub mod describe;
pub mod diag;
pub mod digest;
pub mod disk;
#[doc(hidden)]
pub mod fuzzing;
pub mod grant;
pub mod image;
pub mod inspect;
pub mod lock;
pub mod origin;
pub mod output;
pub mod pod;
pub mod project;
pub mod registry;
pub mod runner;
pub mod secrets;
pub mod source;
pub mod sourcemap;
pub mod yaml;

pub use compile::{Compiled, Options, compile};
