//! The integration tests: one binary, driving the real `clawc` executable.

mod access;
mod bad_input;
mod bombs;
mod check;
mod compat;
mod config;
mod describe;
mod determinism;
mod diagnostics;
mod docs;
mod example_images;
mod fuzz_corpus;
mod golden;
mod grants;
mod harness;
mod hostile;
mod images;
mod layers;
mod merge;
mod native;
mod pod_skills;
mod reuse;
mod robustness;
mod schemas;
mod skill;
mod write;
